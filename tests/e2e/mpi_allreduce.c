/* A real MPI exchange for tests/e2e/test_mpi_local.py: every rank adds its rank in an allreduce and says
   which pod it runs in (HOSTNAME, set by the agent) and what gethostname says there. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank, size, sum;
    char host[256] = "";
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    gethostname(host, sizeof host - 1);
    printf("rank %d of %d in %s (host %s): sum %d\n", rank, size, getenv("HOSTNAME"), host, sum);
    MPI_Finalize();
    return 0;
}
