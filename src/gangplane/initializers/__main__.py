"""``python -m gangplane.initializers dataset|model``: fill the initializer volume from ``STORAGE_URI``."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from gangplane.initializers.fetch import fetch
from gangplane.initializers.sources import DATASET, DEFAULT_OUTPUT, MODEL, SourceError, parse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gangplane.initializers", description=__doc__)
    parser.add_argument("kind", choices=[DATASET, MODEL])
    parser.add_argument("--storage-uri", default=None, help="default: $STORAGE_URI")
    parser.add_argument("--output", type=Path, default=None, help="default: /workspace/<kind>")
    args = parser.parse_args(argv)
    uri = args.storage_uri if args.storage_uri is not None else os.environ.get("STORAGE_URI", "")
    output = args.output or Path(DEFAULT_OUTPUT[args.kind])
    try:
        count = fetch(parse(uri, args.kind), output, os.environ)
    except (SourceError, OSError) as err:
        print(f"{args.kind} initializer: {err}", file=sys.stderr)
        return 1
    print(f"{args.kind} initializer: {count} file{'' if count == 1 else 's'} from {uri} in {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
