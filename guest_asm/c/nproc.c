/* nproc: how many CPUs glibc sees (sysconf reads /sys/devices/system/cpu, get_nprocs too). */
#include <stdio.h>
#include <unistd.h>
#include <sys/sysinfo.h>
int main(void) {
    printf("onln=%ld conf=%ld get_nprocs=%d conf=%d\n", sysconf(_SC_NPROCESSORS_ONLN), sysconf(_SC_NPROCESSORS_CONF), get_nprocs(), get_nprocs_conf());
    return 0;
}
