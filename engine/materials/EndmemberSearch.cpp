// The endmember methods (ATGP, VCA, N-FINDR: materials/EndmemberSearch.h) over one Searcher, the
// passes and kept values they share; one file, about 700 lines, as the three methods are read
// side by side against their papers and share the Searcher's bookkeeping.

#include "materials/EndmemberSearch.h"

#include "core/BlasThreads.h"
#include "core/Error.h"
#include "io/EmptyBands.h"

#include <lapacke.h>

#include <QString>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>
#include <stdexcept>

namespace hyperstream {

namespace {

using Matrix = std::vector<double>;  // row-major

double dot(const double* a, const double* b, int n) {
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// The leading `k` eigenvectors of a symmetric n x n matrix (n x k, row-major, column j for the
// j-th largest eigenvalue, its largest-magnitude entry positive) and their eigenvalues.
Matrix leadingEigenvectors(Matrix matrix, int n, int k, std::vector<double>& values) {
  const BlasThreadsHere threads(fitBlasThreads(n));
  std::vector<double> all(n);
  Matrix vectors(static_cast<size_t>(n) * n);
  std::vector<lapack_int> support(2 * static_cast<size_t>(n));
  lapack_int found = 0;
  const lapack_int info =
      LAPACKE_dsyevr(LAPACK_ROW_MAJOR, 'V', 'A', 'U', n, matrix.data(), n, 0.0, 0.0, 0, 0, 0.0,
                     &found, all.data(), vectors.data(), n, support.data());
  if (info != 0 || found != n)
    throw Error("INPUT",
                "the eigen-decomposition of the bands' correlation did not converge: their "
                "values may span too many orders of magnitude; rescale the bands or leave the "
                "extreme ones out");
  Matrix leading(static_cast<size_t>(n) * k);
  values.resize(k);
  for (int j = 0; j < k; ++j) {
    const int source = n - 1 - j;  // LAPACK's are ascending
    values[j] = all[source];
    int largest = 0;
    for (int i = 1; i < n; ++i)
      if (std::abs(vectors[static_cast<size_t>(i) * n + source]) >
          std::abs(vectors[static_cast<size_t>(largest) * n + source]))
        largest = i;
    const double sign = vectors[static_cast<size_t>(largest) * n + source] < 0 ? -1.0 : 1.0;
    for (int i = 0; i < n; ++i)
      leading[static_cast<size_t>(i) * k + j] = sign * vectors[static_cast<size_t>(i) * n + source];
  }
  return leading;
}

// Columns (n x k) times a vector of k: the combination in n.
std::vector<double> combine(const Matrix& columns, int n, int k, const double* weights) {
  std::vector<double> out(n, 0.0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < k; ++j) out[i] += columns[static_cast<size_t>(i) * k + j] * weights[j];
  return out;
}

// v's coordinates on the columns (n x k): columnsᵀ (v − center).
std::vector<double> coordinates(const Matrix& columns, int n, int k, const std::vector<double>& v,
                                const std::vector<double>& center) {
  std::vector<double> out(k, 0.0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < k; ++j)
      out[j] += columns[static_cast<size_t>(i) * k + j] * (v[i] - center[i]);
  return out;
}

// An orthonormal basis grown one vector at a time (Gram-Schmidt, twice for accuracy).
class OrthonormalBasis {
 public:
  explicit OrthonormalBasis(int n) : n_(n) {}
  int size() const { return static_cast<int>(vectors_.size()); }
  // v less its parts along the basis.
  std::vector<double> complement(std::vector<double> v) const {
    for (int twice = 0; twice < 2; ++twice)
      for (const std::vector<double>& q : vectors_) {
        const double along = dot(q.data(), v.data(), n_);
        for (int i = 0; i < n_; ++i) v[i] -= along * q[i];
      }
    return v;
  }
  // Adds v's complement, normalised; false when nothing of it is left.
  bool add(const std::vector<double>& v) {
    std::vector<double> rest = complement(v);
    const double norm = std::sqrt(dot(rest.data(), rest.data(), n_));
    const double scale = std::sqrt(dot(v.data(), v.data(), n_));
    if (!(norm > 1e-12 * scale)) return false;
    for (double& x : rest) x /= norm;
    vectors_.push_back(std::move(rest));
    return true;
  }
  const std::vector<double>& last() const { return vectors_.back(); }
  // As the columns of an n x size() matrix.
  Matrix columns() const {
    Matrix out(static_cast<size_t>(n_) * size());
    for (int j = 0; j < size(); ++j)
      for (int i = 0; i < n_; ++i) out[static_cast<size_t>(i) * size() + j] = vectors_[j][i];
    return out;
  }

 private:
  int n_;
  std::vector<std::vector<double>> vectors_;
};

// Where a method searches: the image's spectra, or values kept per pixel; `vectorOf` gives a
// pixel's vector there.
struct SearchSpace {
  int dimensions;
  std::function<std::vector<Candidate>(const PixelSearch&)> best;
  std::function<std::vector<double>(int64_t)> vectorOf;
  bool spectra =
      false;  // its vectors are the image's spectra, not values derived from checked ones
};

// The largest value whose products with another, summed over the pixels, stay finite in float64.
constexpr double kLargestValue = 1e150;

// The passes' bookkeeping shared by the methods.
class Searcher {
 public:
  Searcher(SearchPasses& image, int count, EndmemberSearch& result)
      : image_(image), bands_(image.bands()), count_(count), result_(result) {}

  int bands() const { return bands_; }

  int64_t pixels() const { return image_.pixels(); }

  // The image's moments: one pass, the first time, which also fills `sampler` when one is given.
  const Moments& moments(PixelSampler* sampler = nullptr) {
    if (moments_ && sampler) throw std::logic_error("a sample is taken in the first pass");
    if (!moments_) moments_ = measureMoments(sampler);
    return *moments_;
  }

  // Once known (kCountFromScene), the count the checks hold the image to.
  void setCount(int count) {
    count_ = count;
    if (moments_) checkPixelCount(*moments_);
  }

 private:
  Moments measureMoments(PixelSampler* sampler) {
    ++result_.passes;
    Moments m = image_.moments(sampler);
    result_.validPixels = m.count;
    if (m.count == 0)
      throw NoValidPixel(
          "no valid pixel: every pixel is nodata or not finite in at least one band");
    checkPixelCount(m);
    // Products of two values, summed over the pixels, must stay finite and above underflow.
    checkProductScale(m, kLargestValue);
    if (std::equal(m.minimum.begin(), m.minimum.end(), m.maximum.begin()))
      throw Error("INPUT", "every valid pixel has the same spectrum: there is nothing to unmix");
    return m;
  }

  void checkPixelCount(const Moments& m) const {
    if (m.count < count_)
      throw Error("COUNT", std::to_string(count_) + " endmembers asked for, but the image has " +
                               std::to_string(m.count) + " valid pixels");
  }

 public:
  // ATGP's first pick, the largest |x|²: below the square of kSmallestSpread (0 included) when
  // every value is zero or so small that products underflow.
  void checkLargestEnergy(double energy) const {
    if (energy < kSmallestSpread * kSmallestSpread)
      throw Error("INPUT",
                  "the largest |x|² of a valid pixel is " +
                      QString::number(energy, 'g', 3).toStdString() +
                      ": every value is zero or too small for products in float64 (at least "
                      "1e-140): there is nothing to unmix at this scale; rescale the image");
  }

  std::vector<Candidate> best(const PixelSearch& search) {
    ++result_.passes;
    return checked(image_.best(search));
  }

  std::vector<double> spectrum(int64_t pixel) { return image_.spectrum(pixel); }

  // The image's spectra as a search space: a pass over the image per search.
  SearchSpace imageSpace() {
    return {bands_, [this](const PixelSearch& s) { return best(s); },
            [this](int64_t pixel) { return spectrum(pixel); }, true};
  }

  // Whether `columns` values per pixel may be kept (they fit the budget).
  bool mayKeep(int columns) const { return image_.mayKeep(columns); }

  // ATGP's kept residual energy, as a one-dimensional search space: one pass to keep |x|², one
  // per direction to deflate it.
  SearchSpace keepEnergy() {
    ++result_.passes;
    image_.keepEnergy();
    return {1,
            [this](const PixelSearch& s) {
              ++result_.keptSearches;
              // |x|² is kept only where finite: none kept means none was.
              return checked(image_.bestKept(s),
                             "no valid pixel has a finite |x|²: every pixel is nodata, or values "
                             "are too large for products in float64 (beyond about 1e150): mark "
                             "them as nodata or rescale the image");
            },
            [this](int64_t pixel) { return image_.kept(pixel); }};
  }
  void deflate(const std::vector<double>& direction) {
    ++result_.passes;
    image_.deflate(direction);
  }

  // One pass keeping the projection of every pixel; the values kept as a search space, searched
  // without a pass.
  SearchSpace keep(const KeptProjection& projection) {
    ++result_.passes;
    image_.keep(projection);
    return {projection.columns,
            [this](const PixelSearch& s) {
              ++result_.keptSearches;
              return checked(image_.bestKept(s));
            },
            [this](int64_t pixel) { return image_.kept(pixel); }};
  }

  static PixelSearch searchIn(int dimensions, SearchRule rule, std::vector<double> center,
                              Matrix weights, int columns) {
    PixelSearch s;
    s.rule = rule;
    s.bands = dimensions;
    s.columns = columns;
    s.center = std::move(center);
    s.weights = std::move(weights);
    return s;
  }

  [[noreturn]] void tooFewSpectra(int found) const {
    throw Error("COUNT", std::to_string(count_) +
                             " endmembers asked for, but the image's pixels "
                             "span only " +
                             std::to_string(found) + " independent spectra: ask for fewer");
  }

 private:
  std::vector<Candidate> checked(
      const SearchFound& found,
      const std::string& noneValid = "the image has no valid pixel to search") {
    result_.validPixels = found.validPixels;
    for (const Candidate& c : found.best) {
      if (c.pixel >= 0) continue;
      if (found.validPixels > 0)
        throw Error("INPUT",
                    "no valid pixel has a finite score: values too large for their "
                    "products in float64 (beyond about 1e150): mark them as nodata or "
                    "rescale the image");
      throw NoValidPixel(noneValid);
    }
    return found.best;
  }

  SearchPasses& image_;
  int bands_;
  int count_;
  EndmemberSearch& result_;
  std::optional<Moments> moments_;
};

// ATGP over the image with each pixel's residual energy kept: a pass per endmember, each
// projecting the pixels on one direction.
std::vector<int64_t> atgpDeflating(Searcher& searcher, int count) {
  OrthonormalBasis basis(searcher.bands());
  const SearchSpace residual = searcher.keepEnergy();
  PixelSearch largest = Searcher::searchIn(1, SearchRule::Linear, {0.0}, {1.0}, 1);
  largest.constants = {0.0};
  largest.coefficients = {1.0};
  std::vector<int64_t> pixels;
  while (static_cast<int>(pixels.size()) < count) {
    if (!pixels.empty()) searcher.deflate(basis.last());
    const Candidate c = residual.best(largest)[0];
    if (pixels.empty()) searcher.checkLargestEnergy(c.score);
    if (!basis.add(searcher.spectrum(c.pixel))) searcher.tooFewSpectra(basis.size());
    pixels.push_back(c.pixel);
  }
  return pixels;
}

std::vector<int64_t> atgp(Searcher& searcher, const SearchSpace& space, int count) {
  const int n = space.dimensions;
  OrthonormalBasis basis(n);
  std::vector<int64_t> pixels;
  while (static_cast<int>(pixels.size()) < count) {
    const Candidate c = space.best(Searcher::searchIn(
        n, SearchRule::Residual, std::vector<double>(n, 0.0), basis.columns(), basis.size()))[0];
    if (pixels.empty() && space.spectra) searcher.checkLargestEnergy(c.score);
    if (!basis.add(space.vectorOf(c.pixel))) searcher.tooFewSpectra(basis.size());
    pixels.push_back(c.pixel);
  }
  return pixels;
}

// VCA's projected data: each pixel as a vector y of `count` values, and the search that scores
// pixels by |fᵀy| for a direction f. The pixels' coordinates on the leading axes are kept per
// pixel when the budget allows (one pass, then every search is over them), else each search is a
// pass over the image with the axes folded into its weights.
class VcaSpace {
 public:
  VcaSpace(Searcher& searcher, const Moments& m, int count, VcaProjection projection,
           EndmemberSearch& result)
      : count_(count), dimensions_(count) {
    const int n = searcher.bands();
    const auto pixels = static_cast<double>(m.count);
    Matrix covariance(m.comoment);
    for (double& v : covariance) v /= pixels;
    std::vector<double> values;
    Matrix axes = leadingEigenvectors(covariance, n, count, values);
    // The SNR estimate of VCA: signal power in the leading subspace against the rest.
    const double meanPower = dot(m.mean.data(), m.mean.data(), n);
    double trace = 0;
    for (int i = 0; i < n; ++i) trace += covariance[static_cast<size_t>(i) * n + i];
    const double powerY = trace + meanPower;
    const double powerX = std::accumulate(values.begin(), values.end(), 0.0) + meanPower;
    result.snrDb = 10 * std::log10((powerX - count * powerY / n) / (powerY - powerX));
    const double threshold = 15 + 10 * std::log10(count);
    projective_ = projection == VcaProjection::Auto
                      ? !(result.snrDb < threshold)  // a NaN (no noise) too
                      : projection == VcaProjection::Projective;
    std::vector<double> center(n, 0.0);
    if (projective_) {
      // The leading axes of the uncentred second moments; y = Uᵀx / (uᵀ Uᵀx), u = Uᵀ mean.
      Matrix second(covariance);
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) second[static_cast<size_t>(i) * n + j] += m.mean[i] * m.mean[j];
      Matrix projectiveAxes = leadingEigenvectors(second, n, count, values);
      meanCoordinates_ = coordinates(projectiveAxes, n, count, m.mean, center);
      if (projection == VcaProjection::Auto) {
        result.darkSnrDb =
            darkPixelSnr(result.snrDb, covariance, m.mean,
                         combine(projectiveAxes, n, count, meanCoordinates_.data()), n);
        projective_ = !(result.darkSnrDb < threshold) || std::isnan(result.snrDb);
      }
      if (projective_) axes = std::move(projectiveAxes);
    }
    result.projective = projective_;
    if (!projective_) {
      // y = (U_dᵀ(x − mean), c) with d = count − 1 and c the largest |U_dᵀ(x − mean)|.
      dimensions_ = count - 1;
      Matrix leading(static_cast<size_t>(n) * dimensions_);
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < dimensions_; ++j)
          leading[static_cast<size_t>(i) * dimensions_ + j] =
              axes[static_cast<size_t>(i) * count + j];
      axes = std::move(leading);
      center = m.mean;
    }
    chooseSpace(searcher, axes, center);
    if (!projective_) {
      const Candidate far = space_.best(
          Searcher::searchIn(space_.dimensions, SearchRule::Norm, center_, axes_, dimensions_))[0];
      lift_ = std::sqrt(far.score);
    }
  }

  // The SNR (dB) of a pixel two standard deviations darker than the mean brightness b = uᵀUᵀx
  // once the projective projection has divided it by b (its noise grows by mean(b) / b), from the
  // moments; -inf when that pixel would have no brightness left.
  // `direction`: U u, so that b = directionᵀx.
  static double darkPixelSnr(double snrDb, const Matrix& covariance,
                             const std::vector<double>& mean, const std::vector<double>& direction,
                             int n) {
    const double brightness = dot(direction.data(), mean.data(), n);
    double variance = 0;
    for (int i = 0; i < n; ++i)
      variance += direction[i] * dot(&covariance[static_cast<size_t>(i) * n], direction.data(), n);
    const double dark = brightness - 2 * std::sqrt(std::max(0.0, variance));
    if (!(dark > 0)) return -INFINITY;
    return snrDb + 20 * std::log10(dark / brightness);
  }

  // A pixel's y.
  std::vector<double> project(int64_t pixel) const {
    std::vector<double> y =
        coordinates(axes_, space_.dimensions, dimensions_, space_.vectorOf(pixel), center_);
    if (projective_) {
      const double scale = dot(meanCoordinates_.data(), y.data(), count_);
      for (double& v : y) v /= scale;
    } else {
      y.push_back(lift_);
    }
    return y;
  }

  // The pixel of largest |fᵀy|.
  Candidate along(const std::vector<double>& f) const {
    const int n = space_.dimensions;
    if (projective_) {
      // |fᵀUᵀx| / |uᵀUᵀx|: two columns, U f and U u.
      const std::vector<double> numerator = combine(axes_, n, count_, f.data());
      const std::vector<double> denominator = combine(axes_, n, count_, meanCoordinates_.data());
      Matrix weights(static_cast<size_t>(n) * 2);
      for (int i = 0; i < n; ++i) {
        weights[2 * static_cast<size_t>(i)] = numerator[i];
        weights[2 * static_cast<size_t>(i) + 1] = denominator[i];
      }
      return space_.best(Searcher::searchIn(n, SearchRule::Ratio, center_, weights, 2))[0];
    }
    // |f_dᵀU_dᵀ(x − mean) + f_last c|: one column.
    PixelSearch s = Searcher::searchIn(n, SearchRule::Linear, center_,
                                       combine(axes_, n, dimensions_, f.data()), 1);
    s.constants = {f[count_ - 1] * lift_};
    s.coefficients = {1.0};
    return space_.best(s)[0];
  }

 private:
  // The kept coordinates (the axes become the identity, the center zero), or the image.
  void chooseSpace(Searcher& searcher, const Matrix& axes, const std::vector<double>& center) {
    const int n = searcher.bands();
    if (!searcher.mayKeep(dimensions_)) {
      space_ = searcher.imageSpace();
      axes_ = axes;
      center_ = center;
      return;
    }
    KeptProjection projection;
    projection.bands = n;
    projection.columns = dimensions_;
    projection.center = center;
    projection.weights = axes;
    projection.offset.assign(dimensions_, 0.0);
    space_ = searcher.keep(projection);
    axes_.assign(static_cast<size_t>(dimensions_) * dimensions_, 0.0);
    for (int i = 0; i < dimensions_; ++i) axes_[static_cast<size_t>(i) * dimensions_ + i] = 1;
    center_.assign(dimensions_, 0.0);
  }

  int count_;
  int dimensions_;  // of the projection: count (projective) or count − 1 (subspace)
  bool projective_ = false;
  SearchSpace space_;
  Matrix axes_;                          // in the space searched: space dimensions x dimensions_
  std::vector<double> center_;           // in the space searched
  std::vector<double> meanCoordinates_;  // projective: u
  double lift_ = 0;                      // subspace: c
};

std::vector<int64_t> vca(Searcher& searcher, int count, uint64_t seed, VcaProjection choice,
                         EndmemberSearch& result) {
  const VcaSpace projection(searcher, searcher.moments(), count, choice, result);
  std::mt19937_64 random(seed);
  std::normal_distribution<double> normal;
  // The directions found so far span what f must be orthogonal to; at first VCA's e_p.
  OrthonormalBasis found(count);
  std::vector<double> last(count, 0.0);
  last[count - 1] = 1;
  found.add(last);
  std::vector<int64_t> pixels;
  for (int i = 0; i < count; ++i) {
    std::vector<double> w(count);
    for (double& v : w) v = normal(random);
    std::vector<double> f = found.complement(w);
    const double norm = std::sqrt(dot(f.data(), f.data(), count));
    for (double& v : f) v /= norm;
    const Candidate c = projection.along(f);
    const std::vector<double> y = projection.project(c.pixel);
    if (i == 0) found = OrthonormalBasis(count);  // VCA's first pick replaces e_p
    if (!found.add(y)) searcher.tooFewSpectra(i);
    pixels.push_back(c.pixel);
  }
  return pixels;
}

// |det| of an n x n matrix and its inverse (LU); false when singular.
bool invert(Matrix matrix, int n, Matrix& inverse, double& determinant) {
  const BlasThreadsHere threads(fitBlasThreads(n));
  std::vector<lapack_int> pivots(n);
  if (LAPACKE_dgetrf(LAPACK_ROW_MAJOR, n, n, matrix.data(), n, pivots.data()) != 0) return false;
  determinant = 1;
  for (int i = 0; i < n; ++i) determinant *= matrix[static_cast<size_t>(i) * n + i];
  determinant = std::abs(determinant);
  if (!(determinant > 0) || !std::isfinite(determinant)) return false;
  if (LAPACKE_dgetri(LAPACK_ROW_MAJOR, n, matrix.data(), n, pivots.data()) != 0) return false;
  inverse = std::move(matrix);
  return true;
}

// N-FINDR's reduced image: each pixel as [1; y], y its first count − 1 principal components (the
// first column's weights are zero, its offset 1).
KeptProjection simplexCoordinates(const Moments& m, int count, int bands) {
  Matrix covariance(m.comoment);
  for (double& v : covariance) v /= static_cast<double>(m.count - 1);
  std::vector<double> values;
  const Matrix axes = leadingEigenvectors(covariance, bands, count - 1, values);
  KeptProjection projection;
  projection.bands = bands;
  projection.columns = count;
  projection.center = m.mean;
  projection.weights.assign(static_cast<size_t>(bands) * count, 0.0);
  for (int b = 0; b < bands; ++b)
    for (int k = 1; k < count; ++k)
      projection.weights[static_cast<size_t>(b) * count + k] =
          axes[static_cast<size_t>(b) * (count - 1) + k - 1];
  projection.offset.assign(count, 0.0);
  projection.offset[0] = 1;
  return projection;
}

// N-FINDR's simplex: the vertices' [1; y] as the columns of a count x count matrix, whose |det|
// is the volume (times (count − 1)!).
class Simplex {
 public:
  explicit Simplex(int count) : count_(count), vertices_(static_cast<size_t>(count) * count) {}

  void setColumn(int j, const std::vector<double>& column) {
    for (int i = 0; i < count_; ++i) vertices_[static_cast<size_t>(i) * count_ + j] = column[i];
  }
  // |det| of the vertex matrix, and its inverse; false when the simplex is flat.
  bool measure(Matrix& inverse, double& volume) const {
    return invert(vertices_, count_, inverse, volume);
  }
  // For every vertex j, the pixel that makes |det| largest in its place: |row j of the inverse ·
  // [1; y]| is that det over the current one (a search over the kept [1; y]).
  PixelSearch replacements(const Matrix& inverse) const {
    Matrix identity(static_cast<size_t>(count_) * count_, 0.0);
    for (int i = 0; i < count_; ++i) identity[static_cast<size_t>(i) * count_ + i] = 1;
    PixelSearch s = Searcher::searchIn(count_, SearchRule::Linear, std::vector<double>(count_, 0.0),
                                       identity, count_);
    s.slotCount = count_;
    s.constants.assign(count_, 0.0);
    s.coefficients = inverse;
    return s;
  }
  // The vertex matrix with column j replaced.
  Simplex with(int j, const std::vector<double>& column) const {
    Simplex other(*this);
    other.setColumn(j, column);
    return other;
  }

 private:
  int count_;
  Matrix vertices_;
};

constexpr double kVolumeGain = 1e-9;  // a replacement must grow the volume by this much

std::vector<int64_t> nfindr(Searcher& searcher, int count, EndmemberSearch& result) {
  // Two passes over the image: the moments, then every pixel's [1; y] kept; ATGP's start and the
  // replacements search what is kept.
  const SearchSpace kept =
      searcher.keep(simplexCoordinates(searcher.moments(), count, searcher.bands()));
  std::vector<int64_t> pixels = atgp(searcher, kept, count);
  Simplex simplex(count);
  for (int j = 0; j < count; ++j) simplex.setColumn(j, kept.vectorOf(pixels[j]));
  Matrix inverse;
  double volume = 0, startVolume = 0;
  if (!simplex.measure(inverse, startVolume))
    throw Error("COUNT", std::to_string(count) +
                             " endmembers asked for, but ATGP's pixels span "
                             "no simplex in the first " +
                             std::to_string(count - 1) + " principal components: ask for fewer");
  volume = startVolume;
  const int passesAllowed = 10 * count + 20;
  result.converged = false;
  for (int pass = 0; pass < passesAllowed; ++pass) {
    const std::vector<Candidate> best = kept.best(simplex.replacements(inverse));
    std::vector<int> order(count);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return best[a].score > best[b].score; });
    bool replaced = false;
    for (const int j : order) {
      if (!(best[j].score > 1 + kVolumeGain)) break;
      Simplex candidate = simplex.with(j, kept.vectorOf(best[j].pixel));
      Matrix candidateInverse;
      double candidateVolume = 0;
      if (!candidate.measure(candidateInverse, candidateVolume) ||
          !(candidateVolume > volume * (1 + kVolumeGain)))
        continue;
      simplex = candidate;
      inverse = std::move(candidateInverse);
      volume = candidateVolume;
      pixels[j] = best[j].pixel;
      ++result.replacements;
      replaced = true;
    }
    if (!replaced) {
      result.converged = true;
      break;
    }
  }
  result.volumeGrowth = volume / startVolume;
  return pixels;
}

}  // namespace

std::string endmemberMethodName(EndmemberMethod method) {
  switch (method) {
    case EndmemberMethod::Atgp:
      return "atgp";
    case EndmemberMethod::Vca:
      return "vca";
    case EndmemberMethod::Nfindr:
      return "nfindr";
  }
  return {};
}

EndmemberMethod parseEndmemberMethod(const std::string& name) {
  for (const EndmemberMethod m :
       {EndmemberMethod::Atgp, EndmemberMethod::Vca, EndmemberMethod::Nfindr})
    if (name == endmemberMethodName(m)) return m;
  throw Error("METHOD", "'" + name + "' is not an endmember method: vca, nfindr or atgp");
}

std::string vcaChoiceText(const EndmemberSearch& search) {
  QString text = QString("estimated SNR %1 dB").arg(search.snrDb, 0, 'f', 1);
  if (std::isinf(search.darkSnrDb))
    text += ", which the scene's dark pixels would lose entirely to the projective scaling";
  else if (!std::isnan(search.darkSnrDb))
    text += QString(", %1 dB for its dark pixels after the projective scaling")
                .arg(search.darkSnrDb, 0, 'f', 1);
  return (text + (search.projective ? ": projective projection" : ": subspace projection"))
      .toStdString();
}

constexpr const char* kProjectionNames[] = {"auto", "projective", "subspace"};

std::string vcaProjectionName(VcaProjection projection) {
  return kProjectionNames[static_cast<int>(projection)];
}

VcaProjection parseVcaProjection(const std::string& name) {
  for (int i = 0; i < 3; ++i)
    if (name == kProjectionNames[i]) return static_cast<VcaProjection>(i);
  throw Error("VCA_PROJECTION",
              "'" + name + "' is not a VCA projection: auto, projective or subspace");
}

namespace {

// kCountFromScene: the scene's materials (materials/MaterialCount.h), from HySime's dimension
// over the bands that vary and a sample of the pixels, within 2 .. kMaxEndmembers and the band
// count.
int countFromScene(Searcher& searcher, EndmemberSearch& result) {
  PixelSampler sampler(searcher.pixels(), kMaterialSamplePixels);
  const Moments& moments = searcher.moments(&sampler);
  std::vector<int> varying;
  for (int b = 0; b < moments.bands; ++b)
    if (moments.maximum[b] > moments.minimum[b]) varying.push_back(b);
  result.subspace = estimateSignalSubspace(moments, varying);
  const int most = std::min(kMaxEndmembers, std::max(2, searcher.bands()));
  result.materials = countMaterials(sampler.sample(), result.subspace->dimension, most);
  return std::clamp(result.materials->count, 2, most);
}

}  // namespace

EndmemberSearch findEndmembers(SearchPasses& image, const SearchSettings& settings) {
  EndmemberSearch result;
  Searcher searcher(image, std::max(settings.count, 0), result);
  int count = settings.count;
  if (count == kCountFromScene) {
    count = countFromScene(searcher, result);
    searcher.setCount(count);
  }
  if (count < 2 || count > kMaxEndmembers)
    throw Error("COUNT", "the number of endmembers must be from 2 to " +
                             std::to_string(kMaxEndmembers) + " (" + std::to_string(count) +
                             " given)");
  if (count > image.bands())
    throw Error("COUNT", std::to_string(count) + " endmembers asked for, but the image has " +
                             std::to_string(image.bands()) +
                             " bands: a pixel has at most as many independent spectra");
  switch (settings.method) {
    case EndmemberMethod::Atgp:
      result.pixels = searcher.mayKeep(1) ? atgpDeflating(searcher, count)
                                          : atgp(searcher, searcher.imageSpace(), count);
      break;
    case EndmemberMethod::Vca:
      result.pixels = vca(searcher, count, settings.seed, settings.projection, result);
      break;
    case EndmemberMethod::Nfindr:
      result.pixels = nfindr(searcher, count, result);
      break;
  }
  return result;
}

}  // namespace hyperstream
