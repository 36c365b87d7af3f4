/* my_program.c: random look-ups in a small index while a loop scans a bigger table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INDEX (32 * 1024)  /* 32 KiB: 8 pages, looked up at random */
#define TABLE (1024 * 1024) /* 1 MiB: 256 pages, scanned once per round */
#define ROUNDS 2

int main(void)
{
    unsigned char *index = malloc(INDEX), *table = malloc(TABLE);
    if (!index || !table)
        return 1;
    memset(index, 1, INDEX);
    unsigned long sum = 0, x = 1;
    for (int round = 0; round < ROUNDS; round++)
        for (long i = 0; i < TABLE; i += 64) { /* one access per cache line */
            table[i] += 1;
            x = x * 6364136223846793005ul + 1442695040888963407ul;
            sum += index[(x >> 33) % INDEX]; /* a random look-up */
        }
    printf("%lu\n", sum);
    return 0;
}
