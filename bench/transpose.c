/* Transposing a matrix two ways: row by row, and in tiles that fit the L1 cache. */
#include <stdio.h>
#include <stdlib.h>

#ifndef N
#define N 1000 /* a 1000 x 1000 matrix of doubles: 8 MB, far beyond any L1 */
#endif
#define TILE 8 /* 8 x 8 doubles: one 64-byte line per tile row */

static void naive(const double *a, double *b)
{
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            b[j * N + i] = a[i * N + j];
}

static void blocked(const double *a, double *b)
{
    for (int ii = 0; ii < N; ii += TILE)
        for (int jj = 0; jj < N; jj += TILE)
            for (int i = ii; i < ii + TILE; i++)
                for (int j = jj; j < jj + TILE; j++)
                    b[j * N + i] = a[i * N + j];
}

int main(void)
{
    /* page-aligned, so that every process lays the matrices out alike */
    double *a = aligned_alloc(4096, sizeof(double) * N * N);
    double *b = aligned_alloc(4096, sizeof(double) * N * N);
    if (!a || !b)
        return 1;
    for (int i = 0; i < N * N; i++)
        a[i] = i;
    naive(a, b);
    blocked(a, b);
    printf("b[1] = %g\n", b[1]);
    free(a);
    free(b);
    return 0;
}
