#include "core/BlasThreads.h"

#include <QThread>

#include <algorithm>

// Weak, so the engine links and runs with an OpenBLAS that lacks it (before 0.3.27): its address
// is then null. It returns the thread's previous count (0: the process's).
extern "C" int openblas_set_num_threads_local(int threads) __attribute__((weak));
// The process's count, in every OpenBLAS (null where the BLAS is another library).
extern "C" void openblas_set_num_threads(int threads) __attribute__((weak));

namespace hyperstream {

BlasThreadsHere::BlasThreadsHere(int threads) {
  if (available()) previous_ = openblas_set_num_threads_local(std::max(1, threads));
}

BlasThreadsHere::~BlasThreadsHere() {
  if (available()) openblas_set_num_threads_local(previous_);
}

bool BlasThreadsHere::available() {
  return openblas_set_num_threads_local != nullptr;
}

void useOneBlasThreadPerProcess() {
  if (!BlasThreadsHere::available() && openblas_set_num_threads != nullptr)
    openblas_set_num_threads(1);
}

int fitBlasThreads(int order) {
  constexpr int kThreadedOrder = 512;  // above every imaging spectrometer's band count today
  return order < kThreadedOrder ? 1 : std::max(1, QThread::idealThreadCount());
}

}  // namespace hyperstream
