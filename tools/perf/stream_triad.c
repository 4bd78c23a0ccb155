/* A compiled STREAM-style triad (a[i] = b[i] + s*c[i]) with OpenMP: the yardstick the
   agent's stdlib copy probe is judged against (tools/perf/membw.py). Counts 3 arrays moved
   per element, as STREAM does. Usage: stream_triad MIB_PER_ARRAY REPEATS; prints GB/s. */
#include <stdio.h>
#include <stdlib.h>
#include <omp.h>

int main(int argc, char **argv) {
    size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 128;
    int repeats = argc > 2 ? atoi(argv[2]) : 7;
    size_t n = mib * 1024 * 1024 / sizeof(double);
    double *a = malloc(n * sizeof(double)), *b = malloc(n * sizeof(double)),
           *c = malloc(n * sizeof(double));
    if (!a || !b || !c) return 1;
#pragma omp parallel for
    for (size_t i = 0; i < n; i++) { a[i] = 0.0; b[i] = 1.0; c[i] = 2.0; }
    double best = 0.0;
    for (int r = 0; r < repeats; r++) {
        double t = omp_get_wtime();
#pragma omp parallel for
        for (size_t i = 0; i < n; i++) a[i] = b[i] + 3.0 * c[i];
        t = omp_get_wtime() - t;
        double rate = 3.0 * n * sizeof(double) / t / 1e9;
        if (rate > best) best = rate;
    }
    printf("%.3f %f\n", best, a[n / 2]);
    return 0;
}
