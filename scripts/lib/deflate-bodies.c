/* Notification bodies compressed against the first of them, as the SQLite store keeps them
   (Sources/Storage/NotificationBodies.swift), by ISA-L in three settings, for
   `scripts/bench-purchases bodies`:

       deflate-bodies BODIES-FILE

   BODIES-FILE has one body a line; the first is the preset dictionary (its last 32 KiB), the
   others are each compressed against it, five passes, timed on the monotonic clock. Prints one
   line a setting: its name, the mean compressed size and the mean time a body. */
#include <isa-l/igzip_lib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_BODIES 4000
#define MAX_BYTES 65536
#define PASSES 5

static unsigned char *bodies[MAX_BODIES];
static unsigned lengths[MAX_BODIES];
static unsigned char out[MAX_BYTES];
static struct isal_dict dictionary;

struct setting { const char *name; int level; int hufftables; /* -1: the level's own */ };

static void start(struct isal_zstream *stream, int level, unsigned char *buffer, unsigned size) {
    isal_deflate_init(stream);
    stream->level = level;
    stream->level_buf = buffer;
    stream->level_buf_size = size;
}

static int run(struct setting setting, int count) {
    unsigned size = setting.level ? ISAL_DEF_LVL1_DEFAULT : ISAL_DEF_LVL0_DEFAULT;
    unsigned char *buffer = malloc(size);
    struct isal_zstream stream;
    memset(&dictionary, 0, sizeof dictionary);
    start(&stream, setting.level, buffer, size);
    unsigned first = lengths[0] > 32768 ? 32768 : lengths[0];
    if (isal_deflate_process_dict(&stream, &dictionary, bodies[0] + lengths[0] - first, first) != COMP_OK) return 1;
    long total = 0;
    struct timespec began, ended;
    clock_gettime(CLOCK_MONOTONIC, &began);
    for (int pass = 0; pass < PASSES; pass++) {
        for (int index = 1; index < count; index++) {
            start(&stream, setting.level, buffer, size);
            if (isal_deflate_reset_dict(&stream, &dictionary) != COMP_OK) return 1;
            if (setting.hufftables >= 0 && isal_deflate_set_hufftables(&stream, NULL, setting.hufftables) != COMP_OK) return 1;
            stream.next_in = bodies[index];
            stream.avail_in = lengths[index];
            stream.end_of_stream = 1;
            stream.next_out = out;
            stream.avail_out = sizeof out;
            do {
                if (isal_deflate(&stream) != COMP_OK) return 1;
            } while (stream.internal_state.state != ZSTATE_END);
            if (pass == 0) total += sizeof out - stream.avail_out;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &ended);
    double micros = ((ended.tv_sec - began.tv_sec) * 1e9 + (ended.tv_nsec - began.tv_nsec)) / 1e3 / (PASSES * (count - 1));
    printf("%-40s %6ld B a body  %6.2f us a body\n", setting.name, total / (count - 1), micros);
    free(buffer);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: deflate-bodies BODIES-FILE\n"); return 2; }
    FILE *file = fopen(argv[1], "r");
    if (!file) { perror(argv[1]); return 2; }
    static char line[MAX_BYTES];
    int count = 0;
    while (count < MAX_BODIES && fgets(line, sizeof line, file)) {
        size_t length = strcspn(line, "\n");
        bodies[count] = malloc(length);
        memcpy(bodies[count], line, length);
        lengths[count++] = (unsigned)length;
    }
    fclose(file);
    if (count < 2) { fprintf(stderr, "deflate-bodies: fewer than two bodies\n"); return 2; }
    struct setting settings[] = {
        {"level 1, a Huffman code built for each", 1, -1},
        {"level 0, DEFLATE's fixed code (the store)", 0, IGZIP_HUFFTABLE_STATIC},
        {"level 0, ISA-L's default code", 0, IGZIP_HUFFTABLE_DEFAULT},
    };
    printf("%d bodies of %u B against the first\n", count - 1, lengths[1]);
    for (unsigned index = 0; index < sizeof settings / sizeof settings[0]; index++)
        if (run(settings[index], count)) { fprintf(stderr, "deflate-bodies: ISA-L refused %s\n", settings[index].name); return 1; }
    return 0;
}
