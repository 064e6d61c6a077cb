// PCA's kernels on every CPU core: moments of integer pixels exactly with AVX-512 VNNI
// (IntegerMoments), of other pixels with OpenBLAS's DSYRK; the projection in plain vector loops
// on the kernels' worker threads (a GEMM with ten columns spends its time packing the pixels).
// One class, about 700 lines: the implementation of one kernel interface (projection/
// PcaKernels.h), its worker threads and buffers shared by every stage; the loops are in
// projection/CpuPcaLoops.h.

#include "core/BlasThreads.h"
#include "core/CacheLineVector.h"
#include "core/Error.h"
#include "core/Rounding.h"
#include "core/Samples.h"
#include "core/WorkerThreads.h"
#include "projection/CpuPcaLoops.h"
#include "projection/PcaKernels.h"
#include "stats/IntegerMoments.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace hyperstream {

int64_t groupRows(int64_t width) {
  constexpr int64_t kGroupPixels = 1024;  // DSYRK with k >= 1024 runs at its full rate
  return std::max<int64_t>(1, (kGroupPixels + width - 1) / std::max<int64_t>(1, width));
}

namespace {

// Pixels per DSYRK call of the float64 moments: the converted block stays in the cache.
constexpr int64_t kChunkPixels = 1024;

class CpuPcaKernels : public PcaKernels {
 public:
  explicit CpuPcaKernels(bool wideVectors)
      : wideVectors_(wideVectors),
        workers_(threads_.count()),
        integer_(IntegerMoments::supported() ? workers_ : 0),
        floatBuffers_(workers_),
        doubleBuffers_(workers_) {}
  CpuPcaKernels(const CpuPcaKernels&) = delete;
  CpuPcaKernels& operator=(const CpuPcaKernels&) = delete;

  std::string name() const override {
    return "cpu (" + std::to_string(workers_) + " threads" +
           (integer_.empty() || !integerInput_ ? std::string()
                                               : ", exact AVX-512 VNNI integer moments") +
           ", OpenBLAS " + openblas_get_corename() + " kernels)";
  }

  bool usesEveryCore() const override { return true; }

  std::string advice() const override {
    // OpenBLAS falls back to its generic kernels on CPUs newer than its release; they run 3-4x
    // slower than the AVX2/AVX-512 ones the CPU can use.
    const std::string core = openblas_get_corename();
    if ((core == "Prescott" || core == "Core2" || core == "Nehalem") &&
        __builtin_cpu_supports("avx2"))
      return "OpenBLAS does not recognise this CPU and runs its generic " + core +
             " kernels; setting OPENBLAS_CORETYPE=Haswell (or SkylakeX on AVX-512 CPUs) in the "
             "environment before starting makes its float64 kernels (the moments of "
             "floating-point rasters, and of any raster on CPUs without AVX-512 VNNI) 3-4x faster";
    return {};
  }

  bool prepare(const CubeLayout& layout) override {
    total_ = Moments(layout.bands);
    exactSignal_.clear();
    integerInput_ = layout.type != SampleType::Float32 && layout.type != SampleType::Float64;
    return false;
  }

  // MNF's noise from the strips themselves, packed straight into the exact integer moments' band
  // rows, for samples of at most 16 bits on CPUs with AVX-512 VNNI; else the job differences the
  // strips.
  bool takesNoise(SampleType type) const override {
    return !integer_.empty() && type != SampleType::Float32 && type != SampleType::Float64 &&
           sampleSize(type) <= 2;
  }

  void prepareNoise(int rowStep, int columnStep, int64_t width) override {
    noise_ = NoiseShape{rowStep, columnStep, width};
    noiseTotal_ = Moments(total_.bands);
    exactNoise_.clear();
    hasAbove_ = false;
  }

  void setNoiseRowAbove(const StripView& row) override {
    withSampleType(row.type, [&](auto sample) {
      using T = decltype(sample);
      if constexpr (std::is_integral_v<T> && sizeof(T) <= 2) {
        markValid<T>(row);
        keepRowAbove<T>(row, 0);
      }
    });
  }

  Moments takeNoiseMoments(int bands) override {
    Moments result = takeExact(exactNoise_, noiseTotal_, bands);
    noiseTotal_ = Moments(bands);
    return result;
  }

  bool takesBandMajor() const override { return true; }

  void accumulateMoments(const StripView& strip) override {
    if (total_.bands != strip.bands) total_ = Moments(strip.bands);
    withSampleType(strip.type, [&](auto sample) { accumulate<decltype(sample)>(strip, total_); });
  }

  Moments takeMoments(int bands) override {
    Moments result = takeExact(exactSignal_, total_, bands);
    total_ = Moments(bands);
    return result;
  }

  ComponentRange componentRange(const StripView& strip, const Projection& projection) override {
    ComponentRange range;
    range.minimum.assign(projection.components, std::numeric_limits<double>::infinity());
    range.maximum.assign(projection.components, -std::numeric_limits<double>::infinity());
    withSampleType(strip.type, [&](auto sample) {
      forEachProjectedChunk<decltype(sample), float>(
          strip, projection, [&](int64_t first, int64_t count, const float* values) {
            for (int64_t p = 0; p < count; ++p) {
              if (!valid_[first + p]) continue;
              const float* pixel = values + p * projection.components;
              for (int k = 0; k < projection.components; ++k) {
                range.minimum[k] = std::min(range.minimum[k], static_cast<double>(pixel[k]));
                range.maximum[k] = std::max(range.maximum[k], static_cast<double>(pixel[k]));
              }
            }
          });
    });
    return range;
  }

  void project(const StripView& strip, const Projection& projection, const OutputEncoding& encoding,
               void* output) override {
    withSampleType(strip.type, [&](auto sample) {
      withOutputType(encoding.type, [&](auto outputSample) {
        using Out = decltype(outputSample);
        if (projectsInFloat(projection, encoding))
          projectInto<decltype(sample), float>(strip, projection, encoding,
                                               static_cast<Out*>(output));
        else
          projectInto<decltype(sample), double>(strip, projection, encoding,
                                                static_cast<Out*>(output));
      });
    });
  }

 private:
  template <class T>
  void accumulate(const StripView& strip, Moments& total) {
    markValid<T>(strip);
    const int64_t group = strip.groupPixels > 0 ? strip.groupPixels : strip.pixels;
    if constexpr (std::is_integral_v<T> && sizeof(T) <= 4) {
      if (!integer_.empty()) {
        accumulateExactly<T>(strip, group, total);
        if constexpr (sizeof(T) <= 2)
          if (noise_.width > 0) accumulateNoise<T>(strip, group / noise_.width);
        return;
      }
    }
    for (int64_t first = 0; first < strip.pixels; first += group)
      total.merge(groupMoments<T>(strip, first, std::min(group, strip.pixels - first)));
  }

  // Integer samples: the groups go to the worker threads' exact sums (see addGroups).
  template <class T>
  void accumulateExactly(const StripView& strip, int64_t group, Moments& total) {
    const T* data = static_cast<const T*>(strip.data);
    const SampleLayout layout = strip.layout();
    const int64_t groups = (strip.pixels + group - 1) / group;
    const auto count = [&](int64_t g) { return std::min(group, strip.pixels - g * group); };
    startExactSums(
        groups,
        [&](int64_t g) {
          return integer_[0].shiftFor(data + g * group * layout.pixelStep, layout,
                                      valid_.data() + g * group, count(g), strip.bands);
        },
        strip.bands, exactSignal_);
    if (exactSignal_.empty()) return;  // no valid pixel yet
    addGroups(
        groups,
        [&](int worker, int64_t g) {
          return integer_[worker].add(data + g * group * layout.pixelStep, layout,
                                      valid_.data() + g * group, count(g), strip.bands,
                                      exactSignal_[worker]);
        },
        [&](int worker, int64_t g, Moments& result) {
          return integer_[worker].compute(data + g * group * layout.pixelStep, layout,
                                          valid_.data() + g * group, count(g), strip.bands, result);
        },
        [&](int64_t g) { return groupMoments<T>(strip, g * group, count(g)); }, total);
  }

  // Every worker's exact sums, about the shift of the pass's first group that has one
  // (shiftOf(g) is empty for a group without valid pixels), once a strip has such a group. The
  // shift does not depend on the strips or the threads, and neither do the exact sums.
  template <class ShiftOf>
  void startExactSums(int64_t groups, const ShiftOf& shiftOf, int bands,
                      std::vector<ExactSums>& sums) {
    for (int64_t g = 0; g < groups && sums.empty(); ++g) {
      std::vector<int64_t> shift = shiftOf(g);
      if (!shift.empty()) sums.assign(workers_, ExactSums(bands, std::move(shift)));
    }
  }

  // Groups [0, groups), each to the next free worker thread: add(worker, g) adds it to the
  // worker's exact sums, or returns false where they cannot take it (values too far from their
  // shift); then own(worker, g, result) makes its moments about a shift of its own, or returns
  // false, and fallback(g) makes them on this thread. Those groups are merged into `rest` in group
  // order, so that nothing depends on the thread count.
  template <class Add, class Own, class Fallback>
  void addGroups(int64_t groups, const Add& add, const Own& own, const Fallback& fallback,
                 Moments& rest) {
    enum : unsigned char { kAdded, kOwn, kRefused };
    // Kept between strips: the moments of groups taken about their own shift (bands x bands each).
    std::vector<Moments>& results = groupResults_;
    if (static_cast<int64_t>(results.size()) < groups) results.resize(groups);
    groupState_.assign(groups, kAdded);
    std::atomic<int64_t> next{0};
    threads_.onEach([&](int worker) {
      for (int64_t g = next++; g < groups; g = next++)
        if (!add(worker, g)) groupState_[g] = own(worker, g, results[g]) ? kOwn : kRefused;
    });
    const BlasThreadsHere oneThread(1);  // the refused groups' small DSYRKs
    for (int64_t g = 0; g < groups; ++g) {
      if (groupState_[g] == kOwn) rest.merge(results[g]);
      if (groupState_[g] == kRefused) rest.merge(fallback(g));
    }
  }

  // The workers' exact sums, added and rounded, then the groups they refused (`rest`); both reset.
  static Moments takeExact(std::vector<ExactSums>& sums, Moments& rest, int bands) {
    Moments result(bands);
    if (!sums.empty()) {
      for (size_t w = 1; w < sums.size(); ++w) sums[0].add(sums[w]);
      result = sums[0].moments();
      sums.clear();
    }
    if (rest.bands == bands) result.merge(rest);
    return result;
  }

  // MNF's noise: the differences x(r - rowStep, c - columnStep) - x(r, c) over valid pairs, a
  // pair counted at its second pixel (as NoiseDifferences makes them), group by group of rows as
  // the signal; groups whose differences spread past 16 bits go through float64 DSYRK.
  template <class T>
  void accumulateNoise(const StripView& strip, int64_t rowsPerGroup) {
    const NoiseShape& shape = noise_;
    const int64_t width = shape.width, rows = strip.pixels / width;
    const int64_t first = shape.columnStep > 0 ? shape.columnStep : 0;
    const int64_t pairs = width - std::abs(shape.columnStep);
    const T* data = static_cast<const T*>(strip.data);
    const T* above = reinterpret_cast<const T*>(above_.data());
    const SampleLayout layout = strip.layout();
    const SampleLayout aboveLayout = strip.bandMajor ? SampleLayout::bandMajor(width)
                                                     : SampleLayout::pixelInterleaved(strip.bands);
    paired_.resize(static_cast<size_t>(rows * pairs));
    std::vector<DifferenceRow<T>> differenceRows(rows);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t partnerRow = r - shape.rowStep;
      unsigned char* paired = paired_.data() + r * pairs;
      DifferenceRow<T>& row = differenceRows[r];
      row.pixel = data + (r * width + first) * layout.pixelStep;
      row.pixelLayout = layout;
      row.paired = paired;
      const unsigned char* partnerValid = nullptr;
      if (partnerRow >= 0) {
        row.partner = data + (partnerRow * width + first - shape.columnStep) * layout.pixelStep;
        row.partnerLayout = layout;
        partnerValid = valid_.data() + partnerRow * width + first - shape.columnStep;
      } else if (hasAbove_) {
        row.partner = above + (first - shape.columnStep) * aboveLayout.pixelStep;
        row.partnerLayout = aboveLayout;
        partnerValid = aboveValid_.data() + first - shape.columnStep;
      } else {
        row.partner = row.pixel;  // the image's first row: no pairs
        row.partnerLayout = layout;
      }
      const unsigned char* valid = valid_.data() + r * width + first;
      for (int64_t c = 0; c < pairs; ++c) paired[c] = partnerValid ? valid[c] & partnerValid[c] : 0;
    }
    const int64_t groups = (rows + rowsPerGroup - 1) / rowsPerGroup;
    const DifferenceRow<T>* rowsOf = differenceRows.data();
    const auto count = [&](int64_t g) { return std::min(rowsPerGroup, rows - g * rowsPerGroup); };
    startExactSums(
        groups,
        [&](int64_t g) {
          return integer_[0].differenceShiftFor(rowsOf + g * rowsPerGroup, count(g), pairs,
                                                strip.bands);
        },
        strip.bands, exactNoise_);
    if (!exactNoise_.empty())
      addGroups(
          groups,
          [&](int worker, int64_t g) {
            return integer_[worker].addDifferences(rowsOf + g * rowsPerGroup, count(g), pairs,
                                                   strip.bands, exactNoise_[worker]);
          },
          [&](int worker, int64_t g, Moments& result) {
            return integer_[worker].computeDifferences(rowsOf + g * rowsPerGroup, count(g), pairs,
                                                       strip.bands, result);
          },
          [&](int64_t g) {
            return differenceMoments(rowsOf + g * rowsPerGroup, count(g), pairs, strip.bands);
          },
          noiseTotal_);
    keepRowAbove<T>(strip, rows - 1);
  }

  // The strip's row `row` and its validity, as the row above the next strip.
  template <class T>
  void keepRowAbove(const StripView& strip, int64_t row) {
    const int64_t width = noise_.width;
    const T* data = static_cast<const T*>(strip.data);
    above_.resize(static_cast<size_t>(width * strip.bands) * sizeof(T));
    T* kept = reinterpret_cast<T*>(above_.data());
    if (strip.bandMajor) {
      for (int b = 0; b < strip.bands; ++b)
        std::copy_n(data + b * strip.pixels + row * width, width, kept + b * width);
    } else {
      std::copy_n(data + row * width * strip.bands, width * strip.bands, kept);
    }
    aboveValid_.assign(valid_.begin() + row * width, valid_.begin() + (row + 1) * width);
    hasAbove_ = true;
  }

  // Moments of the differences of `count` rows in float64 (DSYRK about the first difference):
  // for the rare groups whose differences do not fit the integer kernel.
  template <class T>
  static Moments differenceMoments(const DifferenceRow<T>* rows, int64_t count, int64_t pairs,
                                   int bands) {
    Moments result(bands);
    std::vector<double> shift(bands, 0.0), sum(bands, 0.0), block;
    int64_t filled = 0;
    auto flush = [&] {
      if (filled == 0) return;
      cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, bands, static_cast<int>(filled), 1.0,
                  block.data(), bands, 1.0, result.comoment.data(), bands);
      filled = 0;
    };
    block.resize(static_cast<size_t>(kChunkPixels) * bands);
    for (int64_t r = 0; r < count; ++r)
      for (int64_t c = 0; c < pairs; ++c) {
        if (!rows[r].paired[c]) continue;
        const DifferenceRow<T>& row = rows[r];
        double* out = block.data() + filled * bands;
        for (int b = 0; b < bands; ++b) {
          const double d =
              static_cast<double>(
                  row.partner[c * row.partnerLayout.pixelStep + b * row.partnerLayout.bandStep]) -
              static_cast<double>(
                  row.pixel[c * row.pixelLayout.pixelStep + b * row.pixelLayout.bandStep]);
          if (result.count == 0 && filled == 0) shift[b] = d;  // the first pair's
          out[b] = d - shift[b];
          sum[b] += out[b];
        }
        ++result.count;
        if (++filled == kChunkPixels) flush();
      }
    flush();
    if (result.count > 0) takeOutShift(shift, sum, result);
    return result;
  }

  // Moments of one group in one pass: each valid pixel, shifted by the group's first valid pixel
  // (close to the mean, so nothing cancels), goes into a float64 block; DSYRK adds the block's
  // co-moment. The shift is taken out exactly at the end.
  template <class T>
  Moments groupMoments(const StripView& strip, int64_t first, int64_t count) {
    const int bands = strip.bands;
    const T* data = static_cast<const T*>(strip.data);
    const SampleLayout layout = strip.layout();
    Moments result(bands);
    int64_t start = first;
    while (start < first + count && !valid_[start]) ++start;
    if (start == first + count) return result;
    std::vector<double>& shift = shift_;
    shift.assign(bands, 0.0);
    for (int b = 0; b < bands; ++b)
      shift[b] = static_cast<double>(data[start * layout.pixelStep + b * layout.bandStep]);
    std::vector<double>& sum = sum_;
    sum.assign(bands, 0.0);
    double* lo = result.minimum.data();
    double* hi = result.maximum.data();
    chunk_.resize(static_cast<size_t>(kChunkPixels) * bands);
    chunkPixels_.resize(kChunkPixels);
    double* block = chunk_.data();
    int64_t filled = 0;
    auto flush = [&] {
      if (filled == 0) return;
      if (!layout.isPixelInterleaved())
        for (int b = 0; b < bands; ++b)
          addShiftedBand(data + b * layout.bandStep, chunkPixels_.data(), filled, shift[b],
                         block + b, bands, &sum[b], &lo[b], &hi[b]);
      cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, bands, static_cast<int>(filled), 1.0,
                  block, bands, 1.0, result.comoment.data(), bands);
      filled = 0;
    };
    for (int64_t p = start; p < first + count; ++p) {
      if (!valid_[p]) continue;
      if (layout.isPixelInterleaved())
        addShiftedPixel(data + p * bands, shift.data(), block + filled * bands, sum.data(), lo, hi,
                        bands);
      else
        chunkPixels_[filled] = p;
      ++result.count;
      if (++filled == kChunkPixels) flush();
    }
    flush();
    takeOutShift(shift, sum, result);
    return result;
  }

  // Sum (x-s)(x-s)^T = M + n (m-s)(m-s)^T: the mean from the shift and the shifted sums, the
  // shift's share subtracted from the upper triangle of result.comoment, mirrored.
  static void takeOutShift(const std::vector<double>& shift, const std::vector<double>& sum,
                           Moments& result) {
    const int bands = result.bands;
    const auto n = static_cast<double>(result.count);
    for (int b = 0; b < bands; ++b) result.mean[b] = shift[b] + sum[b] / n;
    for (int i = 0; i < bands; ++i)
      for (int j = i; j < bands; ++j) {
        double& upper = result.comoment[static_cast<size_t>(i) * bands + j];
        upper -= sum[i] * sum[j] / n;
        result.comoment[static_cast<size_t>(j) * bands + i] = upper;
      }
  }

  // valid_[p] = whether pixel p of the strip is valid, on every worker thread.
  template <class T>
  void markValid(const StripView& strip) {
    valid_.resize(strip.pixels);
    const ValidPixel<T> isValid(strip.nodata, strip.bands);
    if (isValid.alwaysValid()) {
      std::fill(valid_.begin(), valid_.end(), 1);
      return;
    }
    const T* data = static_cast<const T*>(strip.data);
    if (strip.bandMajor) {
      threads_.split(strip.pixels, [&](int64_t first, int64_t last) {
        std::fill(valid_.begin() + first, valid_.begin() + last, 1);
        for (int b = 0; b < strip.bands; ++b)
          clearInvalidSamples(data + b * strip.pixels + first, last - first,
                              isValid.nodataValues()[b], isValid.hasNodata()[b] != 0,
                              valid_.data() + first);
      });
      return;
    }
    threads_.split(strip.pixels, [&](int64_t first, int64_t last) {
      for (int64_t p = first; p < last; ++p) valid_[p] = isValid(data + p * strip.bands) ? 1 : 0;
    });
  }

  // Centres and projects the strip in precision C on every worker thread, calling
  // consume(firstPixel, pixelCount, values) with pixelCount x components values per batch.
  // Invalid pixels are projected as if they were at the centre; consumers skip them.
  template <class T, class C, class Consume>
  void forEachProjectedChunk(const StripView& strip, const Projection& projection,
                             Consume&& consume) {
    markValid<T>(strip);
    const KernelProjection<T, C> kernel(projection, strip.bands);
    std::vector<C>& result = buffers<C>(0).result;
    const int64_t batchPixels = kBatchPixelsPerWorker * workers_;
    for (int64_t batchFirst = 0; batchFirst < strip.pixels; batchFirst += batchPixels) {
      const int64_t batch = std::min(batchPixels, strip.pixels - batchFirst);
      result.resize(static_cast<size_t>(batch) * projection.components);
      threads_.onEach([&](int worker) {
        const int64_t end = batchFirst + batch * (worker + 1) / workers_;
        for (int64_t first = batchFirst + batch * worker / workers_; first < end;
             first += kProjectBlockPixels)
          projectPixels(strip, kernel, first, std::min(kProjectBlockPixels, end - first),
                        buffers<C>(worker).block,
                        result.data() + (first - batchFirst) * projection.components);
      });
      consume(batchFirst, batch, result.data());
    }
  }

  // The workers project the strip a block at a time, each taking the next block when done with
  // one (a worker slowed by another thread on its core takes fewer), and call consume(first
  // pixel, pixels, values, worker) on it at once. A pixel's values do not depend on its block.
  template <class T, class C, class Consume>
  void forEachProjectedBlock(const StripView& strip, const Projection& projection,
                             Consume&& consume) {
    markValid<T>(strip);
    const KernelProjection<T, C> kernel(projection, strip.bands);
    std::atomic<int64_t> next{0};
    threads_.onEach([&](int worker) {
      ProjectionBuffers<C>& mine = buffers<C>(worker);
      mine.result.resize(static_cast<size_t>(kProjectBlockPixels) * projection.components);
      for (int64_t first = next.fetch_add(kProjectBlockPixels); first < strip.pixels;
           first = next.fetch_add(kProjectBlockPixels)) {
        const int64_t count = std::min(kProjectBlockPixels, strip.pixels - first);
        projectPixels(strip, kernel, first, count, mine.block, mine.result.data());
        consume(first, count, mine.result.data(), worker);
      }
    });
  }

  // Projects pixels [first, first + count) of the strip into `out` (count x components) on one
  // worker thread, through a block of centred values that stays in the core's cache: band-major
  // strips' as centred bands (centreBands), pixel-interleaved ones' as centred pixels.
  template <class T, class C>
  void projectPixels(const StripView& strip, const KernelProjection<T, C>& kernel, int64_t first,
                     int64_t count, CacheLineVector<C>& block, C* out) const {
    const T* data = static_cast<const T*>(strip.data);
    const int bands = strip.bands;
    if (strip.bandMajor) {
      const int lanes = (wideVectors_ ? 64 : 32) / static_cast<int>(sizeof(C));
      const int64_t stride = (count + lanes - 1) / lanes * lanes;
      block.resize(static_cast<size_t>(stride) * bands);
      centreBands(data + first, strip.pixels, valid_.data() + first, count, bands,
                  kernel.centring(), stride, block.data());
      const auto project =
          wideVectors_ ? projectBands<C, 64 / sizeof(C)> : projectBands<C, 32 / sizeof(C)>;
      for (int kb = 0; kb < kernel.componentBlocks; ++kb)
        project(block.data(), stride, count, bands, kernel.block(kb), out, kernel.components);
      return;
    }
    block.resize(static_cast<size_t>(kProjectBlockPixels) * bands);
    for (int64_t p = 0; p < count; ++p) {
      C* row = block.data() + p * bands;
      if (!valid_[first + p])
        std::fill(row, row + bands, C(0));
      else if constexpr (std::is_integral_v<T>)
        shiftPixel(data + (first + p) * bands, kernel.shift.data(), row, bands);
      else
        centrePixel(data + (first + p) * bands, kernel.center, row, bands);
    }
    const auto project =
        wideVectors_ ? projectBlock<C, 64 / sizeof(C)> : projectBlock<C, 32 / sizeof(C)>;
    for (int kb = 0; kb < kernel.componentBlocks; ++kb)
      project(block.data(), count, bands, kernel.block(kb), out, kernel.components);
  }

  // Projects in precision C, then encodes (or rebuilds or scores, and encodes) each block into
  // `output` on the worker that projected it, while its values are in the core's cache.
  template <class T, class C, class Out>
  void projectInto(const StripView& strip, const Projection& projection,
                   const OutputEncoding& encoding, Out* output) {
    forEachProjectedBlock<T, C>(
        strip, projection, [&](int64_t first, int64_t count, const C* values, int worker) {
          if (projection.rebuilds()) {
            rebuild(values, first, count, projection, encoding, buffers<C>(worker).row, output);
            return;
          }
          if constexpr (std::is_floating_point_v<Out>) {
            if (projection.scores.active()) {
              score(values, first, count, projection, encoding, output);
              return;
            }
          }
          // Float components as they are, Byte ones rescaled (other types only rebuild).
          if constexpr (std::is_floating_point_v<Out> || std::is_same_v<Out, uint8_t>)
            encode(values, first, count, projection.components, encoding, output);
        });
  }

  // Float components: the values as they are; nodata for invalid pixels.
  template <class C, class Out>
  void encode(const C* values, int64_t first, int64_t count, int components,
              const OutputEncoding& encoding, Out* output) const {
    static_assert(std::is_floating_point_v<Out>);
    for (int64_t p = 0; p < count; ++p) {
      Out* out = output + (first + p) * components;
      const C* in = values + p * components;
      if (valid_[first + p]) {
        for (int k = 0; k < components; ++k) out[k] = static_cast<Out>(in[k]);
      } else {
        std::fill(out, out + components, static_cast<Out>(encoding.nodata));
      }
    }
  }

  // Detection scores (DetectionScores) of `count` projected pixels, in float64.
  template <class C, class Out>
  void score(const C* values, int64_t first, int64_t count, const Projection& projection,
             const OutputEncoding& encoding, Out* output) const {
    const DetectionScores& rule = projection.scores;
    const int components = projection.components;
    const int outputs = projection.outputCount();
    for (int64_t p = 0; p < count; ++p) {
      Out* out = output + (first + p) * outputs;
      if (!valid_[first + p]) {
        std::fill(out, out + outputs, static_cast<Out>(encoding.nodata));
        continue;
      }
      const C* pixel = values + p * components;
      const double distance = sumOfSquares(pixel, rule.whitened);
      if (rule.targetPower.empty()) {
        out[0] = static_cast<Out>(distance);
        continue;
      }
      for (int t = 0; t < outputs; ++t) {
        const auto filtered = static_cast<double>(pixel[rule.whitened + t]);
        out[t] = static_cast<Out>(
            distance > 0 ? filtered * filtered * rule.targetPower[t] / distance : 0.0);
      }
    }
  }

  // Byte components: each rescaled from its range to the encoding's.
  template <class C>
  void encode(const C* values, int64_t first, int64_t count, int components,
              const OutputEncoding& encoding, uint8_t* output) const {
    for (int64_t p = 0; p < count; ++p) {
      uint8_t* out = output + (first + p) * components;
      const C* in = values + p * components;
      if (!valid_[first + p]) {
        std::fill(out, out + components, static_cast<uint8_t>(encoding.nodata));
        continue;
      }
      for (int k = 0; k < components; ++k) {
        const double scaled =
            encoding.byteLow +
            (static_cast<double>(in[k]) - encoding.byteMinimum[k]) * encoding.byteScale[k];
        out[k] = static_cast<uint8_t>(std::clamp(std::round(scaled), 0.0, 255.0));
      }
    }
  }

  // Rebuilt values of `count` projected pixels, in float64, encoded by toSample (`row`: a pixel's
  // float64 values).
  template <class C, class Out>
  void rebuild(const C* values, int64_t first, int64_t count, const Projection& projection,
               const OutputEncoding& encoding, std::vector<double>& row, Out* output) const {
    const int outputs = projection.outputs;
    const int components = projection.components;
    row.resize(static_cast<size_t>(outputs));
    for (int64_t p = 0; p < count; ++p) {
      Out* out = output + (first + p) * outputs;
      if (!valid_[first + p]) {
        std::fill(out, out + outputs, static_cast<Out>(encoding.nodata));
        continue;
      }
      rebuildPixel(values + p * components, components, projection.restore.data(),
                   projection.offset.data(), row.data(), outputs, encoding.nodata,
                   encoding.avoidNodata, out);
    }
  }

  // Per worker thread: the centred block, the projected block (worker 0's: the projected batch
  // of forEachProjectedChunk) and a rebuilt pixel.
  template <class C>
  struct ProjectionBuffers {
    CacheLineVector<C> block;  // band-major blocks load whole vectors of pixels from it
    std::vector<C> result;
    std::vector<double> row;
  };
  template <class C>
  ProjectionBuffers<C>& buffers(int worker) {
    if constexpr (std::is_same_v<C, double>)
      return doubleBuffers_[worker];
    else
      return floatBuffers_[worker];
  }

  bool wideVectors_;  // 64-byte vectors in the projection (AVX-512), else 32-byte ones
  WorkerThreads threads_;
  int workers_;                          // threads_.count()
  std::vector<IntegerMoments> integer_;  // one per worker thread; empty without AVX-512 VNNI
  bool integerInput_ = true;             // the cube prepared for has an integer type
  struct NoiseShape {
    int rowStep = 0, columnStep = 0;
    int64_t width = 0;  // 0: no noise taken
  };
  NoiseShape noise_;
  Moments noiseTotal_;
  std::vector<unsigned char> paired_;
  std::vector<unsigned char> above_, aboveValid_;  // the row above the next strip
  bool hasAbove_ = false;
  std::vector<Moments> groupResults_;
  std::vector<unsigned char> groupState_;  // addGroups: how each group of the strip was taken
  // Integer samples: each worker's exact sums of the signal and of MNF's noise (not started until
  // the first valid pixel); groups they refused are merged into total_ and noiseTotal_.
  std::vector<ExactSums> exactSignal_, exactNoise_;
  Moments total_;
  std::vector<unsigned char> valid_;
  std::vector<double> shift_, sum_;
  std::vector<double> chunk_;
  std::vector<int64_t> chunkPixels_;  // the valid pixels of chunk_ (band-major strips)
  std::vector<ProjectionBuffers<float>> floatBuffers_;
  std::vector<ProjectionBuffers<double>> doubleBuffers_;
};

}  // namespace

std::unique_ptr<PcaKernels> makeCpuPcaKernels() {
  return makeCpuPcaKernels(wideVectors());
}

std::unique_ptr<PcaKernels> makeCpuPcaKernels(bool wideVectors) {
  return std::make_unique<CpuPcaKernels>(wideVectors);
}

}  // namespace hyperstream
