// Cross-architecture smoke test of the emulator runtime (tests/emulator/test_cross_arch.py):
// runs one rewritten kernel (C = A * B, 45 x 37 x 29) through the fibers, barriers,
// simd-group rendezvous and isolated workers, and checks C against a plain loop.
// Usage: driver [simd]   (environment ISO=1: fork 2 worker processes, as kernel.py does)
#include "runtime.cpp"
#include <cmath>
extern "C" void __mslemu_entry_k0();
int main(int argc, char** argv) {
  const bool simd = argc > 1;
  const uint32_t M = 45, N = 37, K = 29;
  float* A = (float*)mmap(nullptr, 4 * M * K, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  float* B = (float*)mmap(nullptr, 4 * K * N, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  float* C = (float*)mmap(nullptr, 4 * M * N, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  uint32_t* dims = (uint32_t*)mmap(nullptr, 16, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  MslemuResult* res = (MslemuResult*)mmap(nullptr, 2 * sizeof(MslemuResult), PROT_READ | PROT_WRITE,
                                          MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  dims[0] = M; dims[1] = N; dims[2] = K;
  for (uint32_t i = 0; i < M * K; ++i) A[i] = (float)((i * 7) % 13) - 6.0f;
  for (uint32_t i = 0; i < K * N; ++i) B[i] = (float)((i * 5) % 11) - 5.0f;
  MslemuLaunch L{};
  void* bufs[6] = {A, B, C, &dims[0], &dims[1], &dims[2]};
  uint64_t sizes[6] = {4ull * M * K, 4ull * K * N, 4ull * M * N, 4, 4, 4};
  const char* names[6] = {"A", "B", "C", "M", "N", "K"};
  for (int i = 0; i < 6; ++i) { L.buf[i] = bufs[i]; L.buf_size[i] = sizes[i]; L.buf_name[i] = names[i]; }
  uint32_t tile = simd ? 32 : 16;
  L.ntg[0] = (N + tile - 1) / tile; L.ntg[1] = (M + tile - 1) / tile; L.ntg[2] = 1;
  if (simd) { L.tptg[0] = 128; L.tptg[1] = 1; } else { L.tptg[0] = 16; L.tptg[1] = 16; }
  L.tptg[2] = 1;
  for (int i = 0; i < 3; ++i) L.grid[i] = L.ntg[i] * L.tptg[i];
  L.timeout = 60; L.race_check = 1;
  const bool iso = getenv("ISO") != nullptr;
  L.workers = iso ? 2 : 1;
  L.parent_pid = getpid();
  L.entry = __mslemu_entry_k0;
  for (int w = 0; w < 2; ++w) { L.results[w] = &res[w]; res[w].status = -1; }
  int rc = 0;
  if (iso) {  // as kernel.py does: fork the workers, wait, take the failing one's report
    int32_t pids[2];
    if (mslemu_fork_workers(&L, pids) != 2) return 2;
    for (int w = 0; w < 2; ++w) {
      int st = 0;
      waitpid(pids[w], &st, 0);
      if (!WIFEXITED(st) || WEXITSTATUS(st)) rc = 1;
      if (res[w].status) printf("%s\n", res[w].msg);
    }
  } else {
    rc = mslemu_run(&L);
    if (res[0].status) printf("%s\n", res[0].msg);
  }
  double err = 0;
  for (uint32_t i = 0; i < M; ++i)
    for (uint32_t j = 0; j < N; ++j) {
      double s = 0;
      for (uint32_t q = 0; q < K; ++q) s += (double)A[i * K + q] * B[q * N + j];
      err = std::fmax(err, std::fabs(s - C[i * N + j]));
    }
  printf("rc=%d status=%d max_err=%g\n", rc, res[0].status, err);
  return rc == 0 && err < 1e-3 ? 0 : 1;
}
