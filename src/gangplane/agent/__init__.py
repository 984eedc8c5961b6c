"""The node agent (kubelet equivalent): runs bound pods as local process groups and reports their status."""
