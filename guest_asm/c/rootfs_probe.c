/* rootfs_probe: what a dynamically linked program does with a guest root — printf, malloc,
 * dlopen of a libc library, pthreads, and reading files placed in the root.  The output must be
 * the same under `emukern run --root R` and `qemu-ARCH -L R` (argv[1] = the data directory). */
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static long counter;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *worker(void *arg) {
    for (int i = 0; i < 1000; i++) {
        pthread_mutex_lock(&lock);
        counter += (long)arg;
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char **)a, *(char **)b); }

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "/data";
    char path[512], buf[256];
    /* malloc: small and large (mmap-backed) blocks */
    char *small = malloc(64), *big = malloc(1 << 20);
    memset(big, 7, 1 << 20);
    snprintf(small, 64, "malloc ok %d", big[12345]);
    printf("%s\n", small);
    free(big);
    free(small);

    /* dlopen of a libc library and a call through dlsym */
    void *h = dlopen("libm.so.6", RTLD_NOW);
    if (!h) { printf("dlopen failed: %s\n", dlerror()); return 1; }
    double (*my_cos)(double) = (double (*)(double))dlsym(h, "cos");
    printf("dlopen libm: cos(0)=%.3f sqrt via dlsym=%s\n", my_cos(0.0), dlsym(h, "sqrt") ? "found" : "missing");
    dlclose(h);

    /* pthreads */
    pthread_t t[3];
    for (long i = 0; i < 3; i++) pthread_create(&t[i], NULL, worker, (void *)(i + 1));
    for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
    printf("threads: counter=%ld\n", counter);

    /* files in the root: stdio, open/read/pread/lseek/fstat, a directory listing */
    snprintf(path, sizeof path, "%s/hello.txt", dir);
    FILE *f = fopen(path, "r");
    if (!f) { printf("fopen %s failed\n", path); return 1; }
    while (fgets(buf, sizeof buf, f)) printf("hello.txt: %s", buf);
    fclose(f);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    fstat(fd, &st);
    ssize_t n = pread(fd, buf, 5, 6);
    buf[n > 0 ? n : 0] = 0;
    printf("fstat size=%lld regular=%d pread(6,5)='%s' lseek_end=%lld\n", (long long)st.st_size,
           S_ISREG(st.st_mode), buf, (long long)lseek(fd, 0, SEEK_END));
    close(fd);
    DIR *d = opendir(dir);
    char *names[64];
    int count = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) && count < 64)
        if (e->d_name[0] != '.') names[count++] = strdup(e->d_name);
    if (d) closedir(d);
    qsort(names, count, sizeof names[0], by_name);
    for (int i = 0; i < count; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        stat(path, &st);
        printf("entry %s %s %lld\n", names[i], S_ISDIR(st.st_mode) ? "dir" : "file",
               S_ISDIR(st.st_mode) ? 0LL : (long long)st.st_size);
    }
    /* relative paths after chdir */
    if (chdir(dir) != 0) { printf("chdir failed\n"); return 1; }
    f = fopen("sub/nested.txt", "r");
    printf("relative open: %s", f && fgets(buf, sizeof buf, f) ? buf : "failed\n");
    if (f) fclose(f);
    printf("missing: %s\n", access("no-such-file", F_OK) == 0 ? "exists" : "ENOENT");
    return 0;
}
