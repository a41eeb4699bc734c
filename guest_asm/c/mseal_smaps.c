/* mseal of the middle page of three: its own vma in /proc/self/smaps with VmFlags ending "sl"
 * (VM_SEALED).  Debian 13 arm64 6.12 printed exactly these two lines under emukern compare. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <sys/syscall.h>
int main(void){
  char *p = mmap(0, 3*4096, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS, -1, 0);
  long r = syscall(462, p+4096, 4096, 0);
  printf("mseal %ld\n", r);
  char line[512]; char want[64]; FILE *f = fopen("/proc/self/smaps","r");
  snprintf(want, sizeof want, "%lx-", (unsigned long)(p+4096));
  int in=0;
  while (fgets(line, sizeof line, f)) {
    if (strchr(line,'-') && line[0]!='V' && !strncmp(line, want, strlen(want))) in=1;
    else if (in && !strncmp(line,"VmFlags",7)) { fputs(line, stdout); in=0; }
  }
  return 0;
}
