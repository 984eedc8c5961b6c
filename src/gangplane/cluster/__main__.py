"""``python -m gangplane.cluster``: the control plane with the embedded cluster (what ``gangplane up`` runs)."""

from gangplane.cluster.process import main

if __name__ == "__main__":
    main()
