"""What-if simulator: the scheduling and admission cores driven in virtual time over workloads and traces."""
