#include "materials/MaterialCount.h"

#include "core/Error.h"
#include "materials/EndmemberSearch.h"
#include "pixels/PixelKernels.h"

#include <QString>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

namespace hyperstream {

namespace {

// The sample as a small image of one strip, searched and unmixed by the CPU kernels the jobs use.
class SampleImage : public SearchPasses {
 public:
  explicit SampleImage(const PixelSample& sample)
      : sample_(sample), nodata_(sample.bands, std::numeric_limits<double>::quiet_NaN()) {
    view_.data = sample.values.data();
    view_.type = SampleType::Float64;
    view_.pixels = sample.size();
    view_.bands = sample.bands;
    view_.nodata = nodata_.data();
    view_.groupPixels = sample.size();
    CubeLayout layout;
    layout.pixels = sample.size();
    layout.bands = sample.bands;
    layout.type = SampleType::Float64;
    layout.maxStripPixels = sample.size();
    kernels_->prepare(layout);
  }

  int bands() const override { return sample_.bands; }
  int64_t pixels() const override { return sample_.size(); }
  Moments moments(PixelSampler* sampler) override {
    if (sampler) sampler->take(view_);
    kernels_->accumulateMoments(view_);
    return kernels_->takeMoments(sample_.bands);
  }
  SearchFound best(const PixelSearch& search) override { return kernels_->search(view_, search); }
  bool mayKeep(int) const override { return true; }
  void keep(const KeptProjection& projection) override {
    kernels_->keepProjection(view_, projection);
  }
  void keepEnergy() override { kernels_->keepEnergy(view_); }
  void deflate(const std::vector<double>& direction) override {
    kernels_->deflateKept(view_, direction);
  }
  SearchFound bestKept(const PixelSearch& search) override { return kernels_->searchKept(search); }
  std::vector<double> kept(int64_t pixel) override { return kernels_->keptValues(pixel); }
  std::vector<double> spectrum(int64_t pixel) override {
    const double* x = sample_.spectrum(pixel);
    return {x, x + sample_.bands};
  }

  // The sample's mean RMSE under FCLS with the endmembers at `pixels` (of the sample), and the
  // pixel of the largest RMSE into `worst`; NaN when no pixel could be solved.
  double meanRmse(const std::vector<int64_t>& pixels, int64_t& worst) {
    Unmixing unmixing;
    unmixing.bands = sample_.bands;
    unmixing.endmembers = static_cast<int>(pixels.size());
    unmixing.method = AbundanceMethod::Fcls;
    unmixing.type = OutputType::Float64;
    unmixing.rmse = true;
    for (const int64_t p : pixels) {
      const double* x = sample_.spectrum(p);
      unmixing.spectra.insert(unmixing.spectra.end(), x, x + sample_.bands);
    }
    const int k = unmixing.endmembers;
    unmixing.gram.resize(static_cast<size_t>(k) * k);
    for (int i = 0; i < k; ++i)
      for (int j = 0; j < k; ++j) {
        double sum = 0;
        for (int b = 0; b < sample_.bands; ++b)
          sum += unmixing.spectra[static_cast<size_t>(i) * sample_.bands + b] *
                 unmixing.spectra[static_cast<size_t>(j) * sample_.bands + b];
        unmixing.gram[static_cast<size_t>(i) * k + j] = sum;
      }
    std::vector<double> abundances(static_cast<size_t>(sample_.size()) * k);
    std::vector<double> rmse(static_cast<size_t>(sample_.size()));
    kernels_->unmix(view_, unmixing, abundances.data(), rmse.data());
    double sum = 0;
    int64_t solved = 0;
    double largest = -1;
    for (size_t i = 0; i < rmse.size(); ++i) {
      const double r = rmse[i];
      if (std::isfinite(r)) {
        sum += r;
        ++solved;
        if (r > largest) {
          largest = r;
          worst = static_cast<int64_t>(i);
        }
      }
    }
    return solved > 0 ? sum / static_cast<double>(solved)
                      : std::numeric_limits<double>::quiet_NaN();
  }

 private:
  const PixelSample& sample_;
  std::vector<double> nodata_;
  StripView view_;
  std::unique_ptr<PixelKernels> kernels_ = makeCpuPixelKernels();
};

// The mean RMSE of each point of the curve and the endmembers it was reached with.
struct CurvePoint {
  double meanRmse = 0;
  std::vector<int64_t> pixels;
  int64_t worst = -1;  // the sample pixel its endmembers fit worst
};

// The curve's point at `count` endmembers: N-FINDR's, or the previous point's endmembers with
// its worst-fitted pixel added where that fits better. Empty where the sample spans no simplex of
// `count` vertices.
std::optional<CurvePoint> curvePoint(SampleImage& image, int count,
                                     const std::optional<CurvePoint>& previous) {
  std::optional<CurvePoint> best;
  try {
    SearchSettings settings;
    settings.method = EndmemberMethod::Nfindr;
    settings.count = count;
    CurvePoint point;
    point.pixels = findEndmembers(image, settings).pixels;
    point.meanRmse = image.meanRmse(point.pixels, point.worst);
    if (std::isfinite(point.meanRmse)) best = std::move(point);
  } catch (const Error&) {
    // No simplex of `count` vertices in N-FINDR's principal components.
  }
  if (previous && previous->worst >= 0) {
    CurvePoint grown;
    grown.pixels = previous->pixels;
    grown.pixels.push_back(previous->worst);
    grown.meanRmse = image.meanRmse(grown.pixels, grown.worst);
    if (std::isfinite(grown.meanRmse) && (!best || grown.meanRmse < best->meanRmse))
      best = std::move(grown);
  }
  return best;
}

// The first P >= 3 whose next step is less than kElbowRatio of the step into it; 0 for none.
int elbowOf(const std::vector<int>& counts, const std::vector<double>& rmse) {
  for (size_t i = 2; i < rmse.size(); ++i) {
    const double into = rmse[i - 2] - rmse[i - 1], next = rmse[i - 1] - rmse[i];
    if (next < kElbowRatio * into) return counts[i - 1];
  }
  return 0;
}

}  // namespace

MaterialCount countMaterials(const PixelSample& sample, int subspaceDimension, int maxCount) {
  if (sample.size() < 3)
    throw Error("INPUT", "too few valid pixels to count the scene's materials (" +
                             std::to_string(sample.size()) + ")");
  MaterialCount result;
  result.subspaceDimension = subspaceDimension;
  result.samplePixels = sample.size();
  const int cap = std::min({maxCount, sample.bands, static_cast<int>(sample.size())});
  const int dimension = std::clamp(subspaceDimension, 2, std::max(2, cap));
  // An elbow counts at P <= dimension - kAgreement - 1, which needs the curve to P + 1; a few
  // points at least, to be looked at.
  int last = std::min(cap, std::max(dimension - kAgreement, 4));
  SampleImage image(sample);
  std::optional<CurvePoint> point;
  for (int p = 2; p <= last; ++p) {
    point = curvePoint(image, p, point);
    if (!point) break;
    result.counts.push_back(p);
    result.meanRmse.push_back(point->meanRmse);
    result.endmembers.push_back(point->pixels);
    if (result.elbow > 0) continue;
    result.elbow = elbowOf(result.counts, result.meanRmse);
    // Past the elbow a few points more, for whoever reads the curve.
    if (result.elbow > 0) last = std::min(cap, result.elbow + kShownPastElbow);
  }
  if (result.counts.empty() && last >= 2)
    throw Error("INPUT", "the scene's valid pixels span no simplex of two endmembers");
  result.count =
      result.elbow > 0 && result.elbow + kAgreement < dimension ? result.elbow : dimension;
  return result;
}

std::string MaterialCount::reason() const {
  if (count == elbow && count != subspaceDimension)
    return QString(
               "where the reconstruction curve bends; the signal subspace's %1 dimensions "
               "(HySime) hold more than materials (their variability, correlated noise)")
        .arg(subspaceDimension)
        .toStdString();
  return QString(
             "the signal subspace's %1 dimensions (HySime); the reconstruction curve does not "
             "bend more than %2 below them")
      .arg(subspaceDimension)
      .arg(kAgreement)
      .toStdString();
}

std::string MaterialCount::curveText() const {
  QString text;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (i > 0) text += ", ";
    text += QString("%1: %2").arg(counts[i]).arg(meanRmse[i], 0, 'g', 4);
    if (counts[i] == elbow) text += " (elbow)";
  }
  return text.toStdString();
}

std::string materialCountText(const MaterialCount& count, const SignalSubspace& subspace) {
  return QString(
             "Materials: %1, %2. Mean RMSE by endmember count (N-FINDR, then FCLS over %3 "
             "sampled pixels): %4. Virtual dimensionality (HFC): %5 / %6 / %7 at false-alarm "
             "rates 1e-3 / 1e-4 / 1e-5")
      .arg(count.count)
      .arg(QString::fromStdString(count.reason()))
      .arg(count.samplePixels)
      .arg(QString::fromStdString(count.curveText()))
      .arg(subspace.virtualDimensionality[0])
      .arg(subspace.virtualDimensionality[1])
      .arg(subspace.virtualDimensionality[2])
      .toStdString();
}

}  // namespace hyperstream
