#pragma once
// The per-column detectors' arithmetic (ColumnDetectJob): each column's co-moments and each
// pixel's whitening, several bands or pixels to a vector. Every value is summed in the order of
// dot() (four partial sums, the rest into the first), products and sums rounded apart (this file
// is compiled without contraction), so that the vectors give the bits of one value at a time.

namespace hyperstream::columns {

// x·y over n values.
double dot(const double* x, const double* y, int n);

// y = L⁻¹ d, L packed lower by rows.
void forwardSubstitute(const double* factor, const double* d, int bands, double* y);

// Values to a vector: bands multiplied at once by addProducts.
constexpr int kLanes = 8;
// Pixels whitened at once by forwardSubstituteLanes.
constexpr int kWhitenedPixels = 2 * kLanes;

// forwardSubstitute for kWhitenedPixels pixels at once, d and y band by band (pixel l's band b at
// [b * kWhitenedPixels + l]).
void forwardSubstituteLanes(const double* factor, const double* d, int bands, double* y);

// s2 (the upper triangle, packed by rows) += Σ_k d_k d_kᵀ over n pixels' deviations (pixel k's
// band b at deviations[k * stride + b]; stride >= paddedBands(bands), the padding any value: it
// only reaches lanes that are not added); entry (i, j) adds dot(d_i, d_j) over the n pixels.
void addProducts(const double* deviations, int n, int bands, int stride, double* s2);

// A pixel's room in addProducts' block: row i's loads, two vectors of kLanes at a time from band i
// on, read up to band bands - 1 + 2 kLanes - 1, so the bands and that much more, rounded up to
// whole pairs of vectors.
constexpr int paddedBands(int bands) {
  return (bands + 2 * kLanes - 1 + 2 * kLanes - 1) / (2 * kLanes) * (2 * kLanes);
}

}  // namespace hyperstream::columns
