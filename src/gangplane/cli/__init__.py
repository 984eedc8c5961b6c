"""The ``gangplane`` command line: a thin shell over the layers below."""
