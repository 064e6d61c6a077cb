// The image rebuilt from its first components: fitted on the image itself (runDenoise), or from a
// component raster with the statistics of the run that wrote it (runInverse). Written in the type
// of the image rebuilt unless asked otherwise, its bands described as that image's.

#include "pca/TransformRun.h"

#include "core/Error.h"
#include "io/QuickLook.h"
#include "io/SpectralMetadata.h"

#include <algorithm>

namespace hyperstream {

namespace {

class DenoiseRun : public TransformRun {
 public:
  using TransformRun::TransformRun;

 private:
  void checkInput() override;
  void choose() override { projection_ = result_.model.rebuilding(chooseComponentCount()); }
  QString bandDescription(int band) const override {
    return QString::fromStdString(result_.input.bandDescriptions[result_.bands[band] - 1]);
  }
  void describeOutput(GDALDataset& dataset, const OutputEncoding& /*encoding*/) const override {
    writeSpectralMetadata(dataset, bandSpectraOf(result_.input.wavelengths, result_.input.fwhm,
                                                 result_.input.goodBands, result_.bands));
  }
  ReportViews reportViews() override;
};

void DenoiseRun::checkInput() {
  checkComponentCount();
  result_.outputType = options_.outputType == OutputType::SameAsInput
                           ? outputTypeOf(input_.info.type)
                           : options_.outputType;
}

// The input and its rebuilt image, the same bands (nearest natural colour) of each, and what was
// removed.
ReportViews DenoiseRun::reportViews() {
  output().dataset().FlushCache();
  ReportViews views;
  views.rebuilt = true;
  const std::vector<int> bands = naturalColourBands(result_.bands, result_.input.wavelengths);
  std::vector<int> positions;  // in the output, which holds the selected bands in order
  positions.reserve(bands.size());
  for (int band : bands)
    positions.push_back(static_cast<int>(
        std::find(result_.bands.begin(), result_.bands.end(), band) - result_.bands.begin() + 1));
  const DatasetPtr input = openRaster(options_.input, "INPUT");
  views.before = makeQuickLook(*input, bands);
  views.after = makeQuickLook(output().dataset(), positions);
  // What was removed: over at most 16 bands spread over the selection (each a read of both
  // images at preview size).
  const auto selected = static_cast<int>(result_.bands.size());
  const int spread = std::min(16, selected);
  std::vector<int> inputBands, outputBands;
  for (int k = 0; k < spread; ++k) {
    const int position = k * selected / spread;
    inputBands.push_back(result_.bands[position]);
    outputBands.push_back(position + 1);
  }
  views.residual = makeDifferenceQuickLook(*input, inputBands, output().dataset(), outputBands);
  views.residualBands = spread;
  return views;
}

// The input holds components written with the saved transform: its first bands, in order.
class InverseRun : public TransformRun {
 public:
  InverseRun(const PcaOptions& options, const DeviceChoice& device, Feedback& feedback,
             JobGroup& group)
      : TransformRun(options, device, feedback, group) {
    readSavedTransform();
  }

 private:
  // The first `components` bands of the component raster (all by default).
  BandList inputBands() const override {
    if (!options_.bands.empty()) return options_.bands;
    return pca_.components > 0 ? BandList{BandRange(1, pca_.components)} : BandList{};
  }
  void checkInput() override;
  void checkSavedBands() const;
  int outputBands() const override { return static_cast<int>(saved_->bands.size()); }
  void choose() override {
    result_.components = bandCount();  // every band of the component raster read
    projection_ = inverseProjection();
  }
  Projection inverseProjection() const;
  const std::vector<double>& fittedNodata() const override { return saved_->nodata; }
  QString bandDescription(int band) const override {
    return static_cast<size_t>(band) < saved_->bandDescriptions.size()
               ? QString::fromStdString(saved_->bandDescriptions[band])
               : QString();
  }
  void describeOutput(GDALDataset& dataset, const OutputEncoding& /*encoding*/) const override {
    writeSpectralMetadata(dataset, saved_->spectra);
  }
  ReportViews reportViews() override {
    ReportViews views;
    views.rebuilt = true;
    return views;
  }
};

void InverseRun::checkInput() {
  checkSavedBands();
  checkComponentsBelong();
  result_.outputType = options_.outputType;
  if (options_.outputType != OutputType::SameAsInput) return;
  const GDALDataType type = GDALGetDataTypeByName(saved_->inputType.c_str());
  if (type == GDT_Unknown)
    throw Error("OUTPUT_TYPE",
                "the statistics do not say the fitted image's data type (an older run): "
                "choose Float32 or Float64");
  result_.outputType = outputTypeOf(type);
}

// Band k holds component k, from the first on.
void InverseRun::checkSavedBands() const {
  const size_t selected = input_.bands.size();
  for (size_t k = 0; k < selected; ++k)
    if (input_.bands[k] != static_cast<int>(k) + 1)
      throw Error("BANDS",
                  "the component raster's bands are taken from the first on, in order "
                  "(band k holds component k)");
  const int components = saved_->model.componentCount();
  if (selected > static_cast<size_t>(components))
    throw Error("INPUT", std::to_string(selected) +
                             " component band(s), but the saved transform has " +
                             std::to_string(components) + " components");
}

// The component raster's values back to components (undoing a Byte rescale), then to the bands:
// y_k = (value_k - byteLow) / scale_k, x = mean + sum_k (min_k + y_k) restore_k.
Projection InverseRun::inverseProjection() const {
  const PcaModel& model = saved_->model;
  const int components = result_.components;
  Projection projection;
  projection.bands = components;
  projection.components = components;
  projection.center.assign(components, 0.0);
  projection.weights.assign(static_cast<size_t>(components) * components, 0.0);
  projection.outputs = model.bands;
  projection.restore = model.restore(components);
  projection.offset = model.mean;
  const bool fromBytes =
      input_.info.type == GDT_Byte && saved_->hasByteRanges && components <= saved_->components;
  for (int k = 0; k < components; ++k) {
    double weight = 1.0;
    if (fromBytes) {
      const double width = saved_->byteMaximum[k] - saved_->byteMinimum[k];
      weight = width > 0 ? width / (255.0 - saved_->byteLow) : 0.0;
      projection.center[k] = saved_->byteLow;
      for (int b = 0; b < model.bands; ++b)
        projection.offset[b] +=
            saved_->byteMinimum[k] * projection.restore[static_cast<size_t>(k) * model.bands + b];
    }
    projection.weights[static_cast<size_t>(k) * components + k] = weight;
  }
  return projection;
}

template <class Run>
PcaResult runWorker(const PcaOptions& options, const DeviceChoice& device, Feedback& feedback,
                    JobGroup& group) {
  return Run(options, device, feedback, group).run();
}

const CovarianceJob<PcaOptions, PcaResult> kDenoise{"PCA", checkTransformOptions,
                                                    runWorker<DenoiseRun>};

void checkInverseOptions(const PcaOptions& options) {
  checkTransformOptions(options);
  if (options.savedTransform.empty())
    throw Error("STATS", "an inverse transform needs the statistics JSON of the fitting run");
}

const CovarianceJob<PcaOptions, PcaResult> kInverse{"PCA", checkInverseOptions,
                                                    runWorker<InverseRun>};

}  // namespace

PcaResult runDenoise(const PcaOptions& options, Feedback& feedback) {
  return runOnDevices(kDenoise, options, feedback);
}

PcaResult runDenoise(const PcaOptions& options, Feedback& feedback, JobGroup& group) {
  return runInGroup(kDenoise, options, feedback, group);
}

PcaResult runInverse(const PcaOptions& options, Feedback& feedback) {
  return runOnDevices(kInverse, options, feedback);
}

}  // namespace hyperstream
