// Spatial preprocessing on the CPU: all cores, 16 pixels of a row per vector.

#include "spp/CpuSpp.h"

#include "core/Samples.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

namespace hyperstream {

namespace {

// Sum of squares in 8 running sums so that the compiler vectorises it without reassociating.
template <class T>
HYPERSTREAM_VECTOR_CLONES double sumOfSquares(const T* __restrict pixel, int bands, double scale) {
  double lanes[8] = {};
  int b = 0;
  for (; b + 8 <= bands; b += 8)
    for (int j = 0; j < 8; ++j) {
      const double v = static_cast<double>(pixel[b + j]) * scale;
      lanes[j] += v * v;
    }
  double sum = 0;
  for (; b < bands; ++b) sum += (pixel[b] * scale) * (pixel[b] * scale);
  for (double lane : lanes) sum += lane;
  return sum;
}

// 1 / |pixel|; samples so large that their squares overflow are scaled by the largest first.
template <class T>
double unitScale(const T* pixel, int bands) {
  const double norm2 = sumOfSquares(pixel, bands, 1.0);
  if (std::isfinite(norm2)) return 1.0 / std::sqrt(norm2);
  double largest = 0;
  for (int b = 0; b < bands; ++b)
    largest = std::max(largest, std::abs(static_cast<double>(pixel[b])));
  return 1.0 / (std::sqrt(sumOfSquares(pixel, bands, 1.0 / largest)) * largest);
}

// W floats in one vector (GCC/clang vector extension). The 16 lanes of a pixel group fill one
// AVX-512 register (W = 16); other CPUs take them as two halves of 8, one after the other (one AVX
// register each): a 16-float vector there is split over register pairs and spills, 3-4x slower.
template <int W>
struct FloatVector {
  using type __attribute__((vector_size(W * sizeof(float)))) = float;
};

// The most column offsets measured together: their sums and the centre pixels stay in registers.
constexpr int kMaxGroup = 8;

// Spectral angles between 16 pixels and their neighbours at N consecutive column offsets:
// out[j][l] = γ(pixel l, its neighbour at the j-th offset), or -1 when either pixel is unusable.
// `centre` and `neighbour` point at the first band's line (the neighbour's moved to the first
// offset already), lines of consecutive bands `lineLength` apart; the validity and noise lines
// likewise. Each angle is less the noise's, sqrt(q_p + q_q), but not below 0 (q = 0: unchanged).
// γ = 2 asin(t), t = |u - v| / 2: accurate for small angles, where arccos of a dot product is not.
// Neighbours' angles are mostly small; there asin's Taylor series (to t^11, relative error below
// 1e-8 for t < 0.25) vectorises and asinf does not.
// Each lane sums its bands in order; only the fusing of multiply-adds may differ with W.
template <int N, int W>
HYPERSTREAM_VECTOR_CLONES void measureLanes(
    const float* __restrict centre, const float* __restrict centreValid,
    const float* __restrict neighbour, const float* __restrict neighbourValid,
    const float* __restrict centreNoise, const float* __restrict neighbourNoise, int64_t lineLength,
    int bands, float (*__restrict out)[CpuSpp::kLanes]) {
  constexpr int kLanes = CpuSpp::kLanes;
  using Vector = typename FloatVector<W>::type;
  float chord2[N][kLanes];
  for (int first = 0; first < kLanes; first += W) {
    Vector sums[N] = {};
    const float* u0 = centre + first;
    const float* v0 = neighbour + first;
    for (int b = 0; b < bands; ++b, u0 += lineLength, v0 += lineLength) {
      Vector u;
      std::memcpy(&u, u0, sizeof u);
      for (int j = 0; j < N; ++j) {
        Vector v;
        std::memcpy(&v, v0 + j, sizeof v);
        const Vector d = u - v;
        sums[j] += d * d;
      }
    }
    for (int j = 0; j < N; ++j) std::memcpy(&chord2[j][first], &sums[j], sizeof(Vector));
  }
  for (int j = 0; j < N; ++j)
    for (int l = 0; l < kLanes; ++l) {
      const float t = std::min(1.0f, std::sqrt(chord2[j][l]) * 0.5f);
      const float t2 = t * t;
      const float series =
          2.0f * t *
          (1.0f + t2 * (1.0f / 6 +
                        t2 * (3.0f / 40 +
                              t2 * (15.0f / 336 + t2 * (105.0f / 3456 + t2 * (945.0f / 42240))))));
      chord2[j][l] = t;
      out[j][l] = centreValid[l] * neighbourValid[j + l] > 0 ? series : -1.0f;
    }
  for (int j = 0; j < N; ++j)
    for (int l = 0; l < kLanes; ++l)
      if (chord2[j][l] >= 0.25f && out[j][l] >= 0) out[j][l] = 2.0f * std::asin(chord2[j][l]);
  for (int j = 0; j < N; ++j)
    for (int l = 0; l < kLanes; ++l)
      if (out[j][l] > 0)
        out[j][l] = std::max(0.0f, out[j][l] - std::sqrt(centreNoise[l] + neighbourNoise[j + l]));
}

using MeasureLanes = void (*)(const float*, const float*, const float*, const float*, const float*,
                              const float*, int64_t, int, float (*)[CpuSpp::kLanes]);

template <int W, size_t... N>
constexpr std::array<MeasureLanes, sizeof...(N)> measureTable(std::index_sequence<N...>) {
  return {measureLanes<N + 1, W>...};
}

// measureLanesFor[wide][N - 1] measures N offsets, with 16-float vectors when `wide`.
const std::array<MeasureLanes, kMaxGroup> measureLanesFor[2] = {
    measureTable<8>(std::make_index_sequence<kMaxGroup>()),
    measureTable<16>(std::make_index_sequence<kMaxGroup>())};

// Row or column `i + delta` under the border rule, or -1 when it is not used; `reflected` tells
// whether the mirror rule moved it.
int64_t neighbour(int64_t i, int delta, int64_t size, bool mirror, bool& reflected) {
  int64_t j = i + delta;
  reflected = false;
  if (j >= 0 && j < size) return j;
  if (!mirror) return -1;
  reflected = true;
  j = j < 0 ? -j : 2 * (size - 1) - j;  // the edge itself not repeated
  return j >= 0 && j < size ? j : -1;
}

}  // namespace

template <class T>
void CpuSpp::unitRows(const SppStrip& strip, const T* samples) {
  const int64_t width = strip.width;
  const ValidPixel<T> isValid(strip.nodata, bands_);
  unit_.resize(static_cast<size_t>(strip.blockRows) * bands_ * lineLength_);
  valid_.resize(static_cast<size_t>(strip.blockRows) * lineLength_);
  noise_.resize(valid_.size());
  threads_.split(strip.blockRows, [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      float* unit = &unit_[static_cast<size_t>(i) * bands_ * lineLength_ + kPad];
      float* valid = &valid_[static_cast<size_t>(i) * lineLength_];
      float* noise = &noise_[static_cast<size_t>(i) * lineLength_];
      std::fill(valid, valid + lineLength_, 0.0f);  // the border and the lanes past the width
      std::fill(noise, noise + lineLength_, 0.0f);
      valid += kPad;
      noise += kPad;
      for (int64_t col = 0; col < width; ++col) {
        const T* pixel = samples + (i * width + col) * bands_;
        const bool usable = validSpectrum(pixel, bands_, isValid);
        const double scale = usable ? unitScale(pixel, bands_) : 0.0;
        valid[col] = usable ? 1.0f : 0.0f;
        noise[col] = static_cast<float>(strip.noiseVariance * scale * scale);
        for (int b = 0; b < bands_; ++b)
          unit[b * lineLength_ + col] = usable ? static_cast<float>(pixel[b] * scale) : 0.0f;
      }
      if (!strip.mirror) continue;  // truncate: the border stays unusable
      for (int k = 1; k <= strip.halo; ++k)
        for (int64_t col : {-int64_t{k}, width - 1 + k}) {
          bool reflected = false;
          const int64_t source = neighbour(col, 0, width, true, reflected);
          if (source < 0) continue;
          valid[col] = valid[source];
          noise[col] = noise[source];
          for (int b = 0; b < bands_; ++b)
            unit[b * lineLength_ + col] = unit[b * lineLength_ + source];
        }
    }
  });
}

void CpuSpp::measureGroup(const SppStrip& strip, int64_t row, int64_t neighbourRow, int dr,
                          int dcFirst, int count, int64_t col, bool forward, bool storeReverse) {
  const int first = window_.index(dr, dcFirst);  // the group's offsets are consecutive
  const int64_t lanes = std::min<int64_t>(kLanes, strip.width - col);
  if (!forward) {  // only what the forward pass left
    bool missing = false;
    for (int j = 0; j < count; ++j)
      for (int64_t l = 0; l < lanes; ++l)
        missing = missing || std::isnan(angles(first + j, row)[col + l]);
    if (!missing) return;
  }
  float out[kMaxGroup][kLanes];
  if (neighbourRow < 0)
    std::fill(&out[0][0], &out[0][0] + sizeof(out) / sizeof(float), -1.0f);
  else
    measureLanesFor[wideVectors_][count - 1](
        unitLine(row, 0) + col, validLine(row) + col, unitLine(neighbourRow, 0) + col + dcFirst,
        validLine(neighbourRow) + col + dcFirst, noiseLine(row) + col,
        noiseLine(neighbourRow) + col + dcFirst, lineLength_, bands_, out);
  for (int j = 0; j < count; ++j) {
    std::copy(out[j], out[j] + kLanes, angles(first + j, row) + col);
    if (!storeReverse) continue;
    // The partners' angles to these pixels, where the partners are pixels of this strip.
    const int dc = dcFirst + j;
    float* reverse = angles(window_.reverse(first + j), neighbourRow);
    if (lanes == kLanes && col + dc >= 0 && col + dc + kLanes <= strip.width)
      std::copy(out[j], out[j] + kLanes, reverse + col + dc);
    else
      for (int64_t l = 0; l < lanes; ++l)
        if (col + l + dc >= 0 && col + l + dc < strip.width) reverse[col + l + dc] = out[j][l];
  }
}

void CpuSpp::measureRow(const SppStrip& strip, int64_t row, bool forward, int64_t colFirst,
                        int64_t colLast) {
  const int h = window_.halo;
  for (int64_t col = colFirst; col < colLast; col += kLanes)
    for (int dr = forward ? 0 : -h; dr <= (forward ? h : 0); ++dr) {
      // Forward offsets: later rows, or later columns of this row; the others are reverse ones.
      const int dcFirst = dr != 0 || !forward ? -h : 1;
      const int dcLast = dr != 0 || forward ? h : -1;
      bool reflected = false;
      const int64_t neighbourRow = neighbour(row, dr, strip.height, strip.mirror, reflected);
      const bool storeReverse =
          forward && neighbourRow >= 0 && !reflected && neighbourRow < row0_ + rows_;
      // The column offsets in groups of at most kMaxGroup, as even as can be (11: 6 and 5).
      const int offsets = dcLast - dcFirst + 1;
      const int groups = (offsets + kMaxGroup - 1) / kMaxGroup;
      for (int g = 0, dc = dcFirst; g < groups; ++g) {
        const int count = (offsets - (dc - dcFirst) + (groups - g) - 1) / (groups - g);
        measureGroup(strip, row, neighbourRow, dr, dc, count, col, forward, storeReverse);
        dc += count;
      }
    }
}

double CpuSpp::run(const SppStrip& strip, const SppOutput& output) {
  prepare(strip);
  measureAngles(strip);
  alphas_.assign(rows_ * strip.width, 0.0);
  withSampleType(strip.type, [&](auto sample) {
    displaceRows(strip, static_cast<const decltype(sample)*>(strip.data), output);
  });
  double sum = 0;
  for (double a : alphas_) sum += a;
  return sum;
}

// The strip's unit vectors and validity, in lines laid out for the angle loops.
void CpuSpp::prepare(const SppStrip& strip) {
  if (window_.halo != strip.halo) window_ = Window(strip.halo);
  bands_ = strip.bands;
  blockRow0_ = strip.blockRow0;
  row0_ = strip.row0;
  rows_ = strip.rows;
  tableLine_ = roundUp(strip.width);
  // An odd number of vectors per line: with an even one, the lines of consecutive bands fall into
  // a few cache sets (24 vectors: an eighth of them) and evict one another.
  lineLength_ = kPad + tableLine_ + kPad;
  if (lineLength_ / kLanes % 2 == 0) lineLength_ += kLanes;
  // Room for the largest strip up front: growing would copy the block and touch new pages.
  const auto largestBlock = static_cast<size_t>(strip.rows + int64_t{2} * strip.halo);
  unit_.reserve(largestBlock * bands_ * lineLength_);
  valid_.reserve(largestBlock * lineLength_);
  noise_.reserve(largestBlock * lineLength_);
  withSampleType(strip.type, [&](auto sample) {
    unitRows(strip, static_cast<const decltype(sample)*>(strip.data));
  });
}

// Every neighbour pair inside the strip is measured once, for both pixels (γ is symmetric): first
// each row's forward offsets, with the partners' reverse ones, then the reverse offsets left over
// (partners in the halo rows or across the border). Both passes split rows between threads; the
// first writes other rows' reverse angles, but never one another's.
void CpuSpp::measureAngles(const SppStrip& strip) {
  const int64_t width = strip.width;
  angles_.assign(static_cast<size_t>(window_.count) * rows_ * tableLine_,
                 std::numeric_limits<float>::quiet_NaN());
  // Column tiles keep the rows a pixel's neighbours come from in the core's cache.
  constexpr int64_t kTileColumns = int64_t{4} * kLanes;
  for (bool forward : {true, false})
    threads_.split(rows_, [&](int64_t first, int64_t last) {
      for (int64_t tile = 0; tile < width; tile += kTileColumns)
        for (int64_t r = first; r < last; ++r)
          measureRow(strip, row0_ + r, forward, tile, std::min(width, tile + kTileColumns));
    });
}

// α: the angles summed with their weights in offset order, the same for any strips or threads;
// then each pixel's alpha, rho and displaced spectrum.
template <typename T>
void CpuSpp::displaceRows(const SppStrip& strip, const T* samples, const SppOutput& output) {
  const int64_t width = strip.width;
  threads_.split(rows_, [&](int64_t first, int64_t last) {
    std::vector<double> weights(width), weighted(width);
    for (int64_t r = first; r < last; ++r) {
      const int64_t row = row0_ + r;
      std::fill(weights.begin(), weights.end(), 0.0);
      std::fill(weighted.begin(), weighted.end(), 0.0);
      for (int o = 0; o < window_.count; ++o) {
        const float* gamma = angles(o, row);
        const double beta = window_.beta[o];
        for (int64_t col = 0; col < width; ++col)
          if (gamma[col] >= 0) {
            weights[col] += beta;
            weighted[col] += beta * gamma[col];
          }
      }
      for (int64_t col = 0; col < width; ++col) {
        const int64_t i = r * width + col;  // in the output
        const T* y = samples + ((row - blockRow0_) * width + col) * bands_;
        const bool usable = validLine(row)[col] > 0;
        const double alpha = weights[col] > 0 ? weighted[col] / weights[col] : 0.0;
        const double shrink = 1 / ((1 + std::sqrt(alpha)) * (1 + std::sqrt(alpha)));
        alphas_[i] = usable ? alpha : 0.0;
        output.alpha[i] =
            usable ? static_cast<float>(alpha) : std::numeric_limits<float>::quiet_NaN();
        output.rho[i] =
            usable ? static_cast<float>(1 / shrink) : std::numeric_limits<float>::quiet_NaN();
        auto displace = [&](auto* out) {
          using O = std::remove_reference_t<decltype(*out)>;
          out += i * bands_;
          if (!usable) {
            std::fill(out, out + bands_, static_cast<O>(strip.outputNodata));
            return;
          }
          for (int b = 0; b < bands_; ++b)
            out[b] = static_cast<O>((static_cast<double>(y[b]) - strip.centroid[b]) * shrink +
                                    strip.centroid[b]);
        };
        if (strip.outputType == OutputType::Float64)
          displace(static_cast<double*>(output.cube));
        else
          displace(static_cast<float*>(output.cube));
      }
    }
  });
}

namespace {

class CpuSppKernels : public SppKernels {
 public:
  CpuSppKernels() : spp_(threads_, wideVectors()) {}
  std::string name() const override {
    return "cpu (" + std::to_string(threads_.count()) + " threads)";
  }
  bool usesEveryCore() const override { return true; }
  double spatialPreprocess(const SppStrip& strip, const SppOutput& output) override {
    return spp_.run(strip, output);
  }

 private:
  WorkerThreads threads_;
  CpuSpp spp_;
};

}  // namespace

std::unique_ptr<SppKernels> makeCpuSppKernels() {
  return std::make_unique<CpuSppKernels>();
}

}  // namespace hyperstream
