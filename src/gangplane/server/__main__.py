"""``python -m gangplane.server``: the control-plane process ``gangplane up`` starts in the background."""

from __future__ import annotations

import argparse
from pathlib import Path

from gangplane.server.lifecycle import DEFAULT_HOST, DEFAULT_PORT, default_state_dir, load_admission, serve


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m gangplane.server", description=__doc__)
    parser.add_argument("--state-dir", type=Path, default=None, help="$GANGPLANE_HOME or ~/.gangplane")
    parser.add_argument("--host", default=DEFAULT_HOST)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--admission", default=None, help="module:attribute of an Admission callable")
    args = parser.parse_args(argv)
    admission = load_admission(args.admission) if args.admission else None
    serve(args.state_dir or default_state_dir(), args.host, args.port, admission=admission)


if __name__ == "__main__":
    main()
