// The emulator's worker executable (original code): a fresh process that loads a kernel's
// shared object and runs one worker's share of a launch in it (mslemu_worker, runtime.cpp).
// kernel.py starts it with posix_spawn where forking the caller is not safe (macOS: a
// process that has loaded Apple's frameworks must not run after fork() without exec()).
//
// usage: worker <kernel.so> <entry symbol> <region fd> <region size> <worker index>
#include <dlfcn.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

typedef void (*Entry)(void);
typedef int (*WorkerFn)(int fd, uint64_t size, int index, Entry entry);

int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: %s <kernel.so> <entry symbol> <region fd> <region size> <worker index>\n", argv[0]);
    return 2;
  }
  void* so = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!so) {
    fprintf(stderr, "emulator worker: %s\n", dlerror());
    return 3;
  }
  WorkerFn worker = (WorkerFn)dlsym(so, "mslemu_worker");
  Entry entry = (Entry)dlsym(so, argv[2]);
  if (!worker || !entry) {
    fprintf(stderr, "emulator worker: %s has no mslemu_worker or %s\n", argv[1], argv[2]);
    return 3;
  }
  return worker(atoi(argv[3]), strtoull(argv[4], nullptr, 10), atoi(argv[5]), entry);
}
