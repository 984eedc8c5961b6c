"""``python -m gangplane.server``: the control-plane process ``gangplane up`` starts in the background."""

from __future__ import annotations

import argparse
from pathlib import Path

from gangplane.server.lifecycle import DEFAULT_HOST, DEFAULT_PORT, default_state_dir, serve


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m gangplane.server", description=__doc__)
    parser.add_argument("--state-dir", type=Path, default=None, help="$GANGPLANE_HOME or ~/.gangplane")
    parser.add_argument("--host", default=DEFAULT_HOST)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    args = parser.parse_args(argv)
    serve(args.state_dir or default_state_dir(), args.host, args.port)


if __name__ == "__main__":
    main()
