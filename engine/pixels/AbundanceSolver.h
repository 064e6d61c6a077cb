#pragma once
// A pixel's abundances from its products with the endmembers: a = argmin ½ aᵀGa − bᵀa, the
// least-squares fit of the pixel x by the endmember spectra E (G = E Eᵀ, b = E x), under the
// method's constraints, solved exactly by the primal active-set method (Nocedal & Wright,
// "Numerical Optimization", Algorithm 16.3): the set of abundances held at zero changes one index
// at a time until the KKT conditions hold, each step solving the equality-constrained problem on
// the free abundances by a Cholesky factor of their Gram block. Header-only and host/device: the
// CPU and the GPU run the same arithmetic.

#include "core/Rounding.h"  // HYPERSTREAM_HOST_DEVICE

#include <cmath>

namespace hyperstream {

constexpr int kMaxEndmembers = 32;

enum class AbundanceMethod {
  Ucls,  // unconstrained least squares
  Nnls,  // a >= 0
  Fcls,  // a >= 0 and sum(a) = 1 (Heinz & Chang 2001's problem, solved exactly)
};

// MaxCount bounds the endmembers (the arrays live on the stack, or in a GPU thread's registers
// and local memory); count <= MaxCount.
template <int MaxCount>
class AbundanceSolver {
 public:
  // `gram`: count x count, row-major, positive definite (the job checks that the endmembers are
  // independent).
  HYPERSTREAM_HOST_DEVICE AbundanceSolver(const double* gram, int count, AbundanceMethod method)
      : gram_(gram), count_(count), method_(method) {
    double largest = 0;
    for (int i = 0; i < count; ++i) largest = fmax(largest, gram[i * count + i]);
    tolerance_ = 1e-12 * largest;
  }

  // The abundances for products `b` into `a`; false when the iterations ran out (a is then the
  // last feasible point) or a Gram block was not positive definite.
  HYPERSTREAM_HOST_DEVICE bool solve(const double* b, double* a) {
    for (int i = 0; i < count_; ++i) free_[i] = 1;
    double multiplier = 0;
    if (!freeMinimum(b, a, multiplier)) return false;
    if (method_ == AbundanceMethod::Ucls || nonNegative(a)) return true;
    startFeasible(b, a);
    for (int iteration = 0; iteration < 4 * count_ + 16; ++iteration) {
      if (!freeMinimum(b, target_, multiplier)) return false;
      if (stepTowards(a)) continue;  // a constraint blocked the step
      const int entering = mostNegativeMultiplier(b, a, multiplier);
      if (entering < 0) return true;
      free_[entering] = 1;
    }
    return false;
  }

 private:
  HYPERSTREAM_HOST_DEVICE bool nonNegative(const double* a) const {
    for (int i = 0; i < count_; ++i)
      if (a[i] < 0) return false;
    return true;
  }

  // A feasible start: NNLS all zero; FCLS the best single endmember (a vertex of the simplex).
  HYPERSTREAM_HOST_DEVICE void startFeasible(const double* b, double* a) {
    for (int i = 0; i < count_; ++i) {
      a[i] = 0;
      free_[i] = 0;
    }
    if (method_ != AbundanceMethod::Fcls) return;
    int best = 0;
    for (int i = 1; i < count_; ++i)
      if (0.5 * gram_[i * count_ + i] - b[i] < 0.5 * gram_[best * count_ + best] - b[best])
        best = i;
    a[best] = 1;
    free_[best] = 1;
  }

  // Moves `a` towards target_ as far as the zero bounds allow; true when one blocked the step
  // (that abundance is then held at zero).
  HYPERSTREAM_HOST_DEVICE bool stepTowards(double* a) {
    double step = 1;
    int blocking = -1;
    for (int i = 0; i < count_; ++i)
      if (free_[i] && target_[i] < 0) {
        const double ratio = a[i] / (a[i] - target_[i]);
        if (ratio < step) {
          step = ratio;
          blocking = i;
        }
      }
    for (int i = 0; i < count_; ++i)
      if (free_[i]) a[i] += step * (target_[i] - a[i]);
    if (blocking < 0) return false;
    a[blocking] = 0;
    free_[blocking] = 0;
    return true;
  }

  // At the free abundances' minimum: the Lagrange multiplier of each abundance held at zero,
  // (G a − b)_i + μ; the index of the most negative one below −tolerance, or −1 (optimal).
  HYPERSTREAM_HOST_DEVICE int mostNegativeMultiplier(const double* b, const double* a,
                                                     double multiplier) const {
    int entering = -1;
    double lowest = -tolerance_;
    for (int i = 0; i < count_; ++i) {
      if (free_[i]) continue;
      double gradient = -b[i];
      for (int j = 0; j < count_; ++j) gradient += gram_[i * count_ + j] * a[j];
      if (gradient + multiplier < lowest) {
        lowest = gradient + multiplier;
        entering = i;
      }
    }
    return entering;
  }

  // The minimum over the free abundances (the others zero) into `out`: G_FF y = b_F, and for
  // FCLS also G_FF z = 1, μ = (Σy − 1) / Σz, out = y − μ z. False when G_FF is not positive
  // definite.
  HYPERSTREAM_HOST_DEVICE bool freeMinimum(const double* b, double* out, double& multiplier) {
    int k = 0;
    for (int i = 0; i < count_; ++i)
      if (free_[i]) index_[k++] = i;
    if (!factorFree(k)) return false;
    for (int r = 0; r < k; ++r) y_[r] = b[index_[r]];
    solveFactored(k, y_);
    multiplier = 0;
    if (method_ == AbundanceMethod::Fcls) {
      for (int r = 0; r < k; ++r) z_[r] = 1;
      solveFactored(k, z_);
      double sumY = 0, sumZ = 0;
      for (int r = 0; r < k; ++r) {
        sumY += y_[r];
        sumZ += z_[r];
      }
      multiplier = (sumY - 1) / sumZ;
      for (int r = 0; r < k; ++r) y_[r] -= multiplier * z_[r];
    }
    for (int i = 0; i < count_; ++i) out[i] = 0;
    for (int r = 0; r < k; ++r) out[index_[r]] = y_[r];
    return true;
  }

  // The lower Cholesky factor of the free block of G, in factor_ (k x k, row-major).
  HYPERSTREAM_HOST_DEVICE bool factorFree(int k) {
    for (int r = 0; r < k; ++r)
      for (int c = 0; c <= r; ++c) {
        double sum = gram_[index_[r] * count_ + index_[c]];
        for (int j = 0; j < c; ++j) sum -= factor_[r * MaxCount + j] * factor_[c * MaxCount + j];
        if (r == c) {
          if (!(sum > 0)) return false;
          factor_[r * MaxCount + r] = sqrt(sum);
        } else {
          factor_[r * MaxCount + c] = sum / factor_[c * MaxCount + c];
        }
      }
    return true;
  }

  // v := (L Lᵀ)⁻¹ v.
  HYPERSTREAM_HOST_DEVICE void solveFactored(int k, double* v) const {
    for (int r = 0; r < k; ++r) {
      double sum = v[r];
      for (int j = 0; j < r; ++j) sum -= factor_[r * MaxCount + j] * v[j];
      v[r] = sum / factor_[r * MaxCount + r];
    }
    for (int r = k - 1; r >= 0; --r) {
      double sum = v[r];
      for (int j = r + 1; j < k; ++j) sum -= factor_[j * MaxCount + r] * v[j];
      v[r] = sum / factor_[r * MaxCount + r];
    }
  }

  const double* gram_;
  int count_;
  AbundanceMethod method_;
  double tolerance_ = 0;
  unsigned char free_[MaxCount];
  int index_[MaxCount];
  double target_[MaxCount];
  double y_[MaxCount], z_[MaxCount];
  double factor_[MaxCount * MaxCount];
};

}  // namespace hyperstream
