#pragma once
// How many of OpenBLAS's threads the BLAS and LAPACK calls made on this thread may use.
//
// OpenBLAS >= 0.3.27 keeps that count per calling thread (openblas_set_num_threads_local); older
// releases keep one count per process, which a plugin inside QGIS must not change, so with them
// the guard below does nothing and OpenBLAS uses its own default.

namespace hyperstream {

// Sets this thread's count for the guard's lifetime and restores the previous one after.
class BlasThreadsHere {
 public:
  explicit BlasThreadsHere(int threads);
  ~BlasThreadsHere();
  BlasThreadsHere(const BlasThreadsHere&) = delete;
  BlasThreadsHere& operator=(const BlasThreadsHere&) = delete;

  // Whether the OpenBLAS in use counts per thread.
  static bool available();

 private:
  int previous_ = 0;
};

// For a process that is the engine's alone (the command line, never QGIS): where OpenBLAS counts
// threads per process, one thread for all of it. The worker threads make the parallelism; the
// fit's LAPACK calls, with OpenBLAS's threads, would leave them spinning (sched_yield) on every
// core against the next pass (measured on 16 cores: PCA of the 2.09 GB cube 1.04 -> 0.90 s).
// Where OpenBLAS counts per thread it does nothing: BlasThreadsHere already does this per call.
void useOneBlasThreadPerProcess();

// The threads for a fit's LAPACK calls on matrices of `order` rows. A few hundred bands take
// milliseconds on one core, and once woken OpenBLAS's threads spin on every core for a while after
// the call, against the worker threads of the next pass; larger matrices gain from the threads.
int fitBlasThreads(int order);

}  // namespace hyperstream
