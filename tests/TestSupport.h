#pragma once
// Test helpers: cubes in memory, written with GDAL, and the independent float64 references of PCA
// and MNF (plain two-pass loops, a Cholesky and a Jacobi eigen-solver; none of the engine's code).

#include "stats/Moments.h"

#include <gdal.h>
#include <gdal_priv.h>

#include <QString>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace testing {

// A cube in memory, pixel-interleaved float64.
struct Cube {
  int64_t rows = 0, cols = 0;
  int bands = 0;
  std::vector<double> values;
  std::vector<double> nodata;  // per band, NaN for none
  double& at(int64_t row, int64_t col, int band) {
    return values[static_cast<size_t>((row * cols + col) * bands + band)];
  }
  double at(int64_t row, int64_t col, int band) const {
    return values[static_cast<size_t>((row * cols + col) * bands + band)];
  }
  int64_t pixels() const { return rows * cols; }
};

// x = mean + L z with band means about `mean` +- 50 and a random lower-triangular L whose
// columns shrink geometrically, so the eigenvalues are distinct and known in expectation.
Cube correlatedCube(int64_t rows, int64_t cols, int bands, uint64_t seed, double mean = 5000.0,
                    double spread = 200.0);
// A scene with spatial structure, as MNF expects: four smooth abundance fields times spectra
// about `mean`, plus white noise of a different level (2 to 10) in each band.
Cube smoothScene(int64_t rows, int64_t cols, int bands, uint64_t seed, double mean = 3000.0);
// Rounds values to the nearest integer (for integer file types).
void roundValues(Cube& cube);

void writeCube(const Cube& cube, const std::string& path, GDALDataType type,
               const std::string& driver = "GTiff", const std::vector<std::string>& options = {});
Cube readCube(const std::string& path);
// A raster opened read-only by any name GDAL takes (nullptr when it cannot), and every band's
// samples, band after band, as float64 (empty when it cannot be read).
std::unique_ptr<GDALDataset> openReadOnly(const QString& name);
std::vector<double> samplesOf(const QString& name);
// `cube` as a netCDF-4 file holding two arrays, reflectance(band, y, x) as UInt16 and mask(y, x),
// with coordinates GDAL reads north up: NETCDF:"path":reflectance reads as the cube.
void writeNetcdfCube(const Cube& cube, const std::string& path);

// Cyclic Jacobi eigen-decomposition of a symmetric matrix (n x n, row-major): the eigenvalues,
// unsorted; `vectors` gets the eigenvectors as columns.
std::vector<double> jacobi(std::vector<double> a, int n, std::vector<double>& vectors);

struct Reference {
  int64_t valid = 0;
  std::vector<double> mean, stddev;
  std::vector<int> constant;                 // 0-based bands left out
  std::vector<double> eigenvalues;           // descending
  std::vector<std::vector<double>> vectors;  // per component, loadings per band
};
bool referenceValid(const Cube& cube, int64_t pixel);
Reference referencePca(const Cube& cube, bool correlation = false);
// The MNF (noise-adjusted PCA) reference: the noise covariance from the differences x(r, c) -
// x(r + rowStep, c + columnStep) of valid pairs, halved; S w = λ N w by a Cholesky of N and Jacobi
// (eigenvalues λ = 1 + SNR; vectors as the engine's, wᵀ N w = 1, largest-magnitude loading
// positive). Components by referenceComponent(cube, reference, k).
Reference referenceMnf(const Cube& cube, int rowStep, int columnStep);
// The noise covariance alone, and how many valid pairs went into it.
std::vector<double> referenceNoiseCovariance(const Cube& cube, int rowStep, int columnStep,
                                             int64_t& pairs);
// Component k of every pixel (NaN for invalid pixels).
std::vector<double> referenceComponent(const Cube& cube, const Reference& reference, int k,
                                       bool correlation = false);
// What each reference component adds back to the bands (per component, per band): its loadings
// (PCA; times the standard deviations for a correlation fit) or N w_k (MNF, `noise` its noise
// covariance, bands x bands).
std::vector<std::vector<double>> referenceInverseLoadings(const Reference& reference, int bands,
                                                          const std::vector<double>* noise,
                                                          bool correlation = false);
// Each valid pixel rebuilt from its first `components` components: mean + Σ_k y_k inverse[k];
// NaN for invalid pixels.
Cube referenceRebuild(const Cube& cube, const Reference& reference, int components,
                      const std::vector<std::vector<double>>& inverse, bool correlation = false);
// Band `band` of an output cube as a vector.
std::vector<double> bandValues(const Cube& cube, int band);
// Pearson correlation over the pixels where both are finite.
double correlation(const std::vector<double>& a, const std::vector<double>& b);
double maxRelativeDifference(const std::vector<double>& a, const std::vector<double>& b);
// The largest |values[k] / reference[k] - 1|, the first k where it exceeds `tolerance` (-1:
// none) and a message naming that `what` ("eigenvalue 3: ... vs reference ...").
struct RelativeErrors {
  double worst = 0;
  int firstBeyond = -1;
  std::string message;
};
RelativeErrors relativeErrors(const std::vector<double>& values,
                              const std::vector<double>& reference, double tolerance,
                              const char* what);
// Band k of a written cube (its nodata as NaN) against expected values (NaN where invalid): 1 - r
// over the valid pixels, or 2 when the two disagree on which pixels are valid.
double componentMismatch(const Cube& written, int k, const std::vector<double>& expected);

// A VRT of `cube` (as Int16) at `path`, made of two files beside it: rows [0, firstMissing) and
// the rest; the second file is deleted, so reading rows from firstMissing on fails while the
// rows above read fine.
void writeVrtMissingRows(const Cube& cube, int64_t firstMissing, const QString& path);

// A fresh temporary folder for one test (removed with the process' QTemporaryDir).
QString tempDir();
// ../shared/data beside the repository (or $HYPERSTREAM_SHARED_DATA), or empty when absent.
QString sharedDataDir();
// How much this process's peak resident memory grows while `work` runs, in bytes: the peak
// (VmHWM, reset first through /proc/self/clear_refs, Linux 4.0 and later) less the resident size
// before. -1, and nothing run, where the peak cannot be reset. Heap that earlier work freed but the
// allocator kept can hide part of the growth.
int64_t peakGrowth(const std::function<void()>& work);
// Under AddressSanitizer, whose shadow memory and quarantine add to the resident size far
// beyond what a job allocates: memory budgets cannot be checked there.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool underAddressSanitizer = true;
#else
constexpr bool underAddressSanitizer = false;
#endif
// What a job may add to the peak beyond its RAM budget (GDAL's and BLAS's own bookkeeping).
constexpr int64_t kPeakSlackBytes = 16ll << 20;

// Files and folders in a folder, hidden ones too (to check that nothing was left behind).
QStringList filesIn(const QString& folder);

// Moments of the pixels with valid[p] != 0 of pixel-interleaved `values`, two-pass in long double.
hyperstream::Moments referenceMoments(const std::vector<double>& values,
                                      const std::vector<unsigned char>& valid, int bands);
// Largest |a - b| of two co-moment matrices, relative to sqrt(M_ii M_jj) of the reference.
double comomentError(const hyperstream::Moments& a, const hyperstream::Moments& reference);

// The valid pixels' values of the bands `used`, band-major (band i's pixels together).
std::vector<std::vector<long double>> bandRows(const Cube& cube, const std::vector<int>& used);
long double dot(const std::vector<long double>& a, const std::vector<long double>& b);
// y less its least-squares regression on `others`: the regression's residual.
std::vector<long double> regressionResidual(
    const std::vector<long double>& y, const std::vector<const std::vector<long double>*>& others);
// HySime's noise of each band of `used`: the variance, over the valid pixels, of its residual
// from its regression on the other bands.
std::vector<double> referenceRegressionNoise(const Cube& cube, const std::vector<int>& used);

}  // namespace testing
