#include "pca/TransformRun.h"

#include "core/Error.h"
#include "covariance/FitStatistics.h"
#include "projection/MnfFit.h"

#include <QString>

#include <algorithm>
#include <cmath>
#include <limits>

namespace hyperstream {

namespace {

// What component rasters record of the fit that wrote them (default metadata domain).
constexpr const char* kTransformKey = "HYPERSTREAM_TRANSFORM";
constexpr const char* kFitIdKey = "HYPERSTREAM_FIT_ID";
constexpr const char* kByteRangesKey = "HYPERSTREAM_BYTE_RANGES";

// "low minimum:maximum ...", in full precision.
std::string byteRangesText(double low, const std::vector<double>& minimum,
                           const std::vector<double>& maximum) {
  QString text = QString::number(low);
  for (size_t k = 0; k < minimum.size(); ++k)
    text += QString(" %1:%2").arg(minimum[k], 0, 'g', 17).arg(maximum[k], 0, 'g', 17);
  return text.toStdString();
}

// Whether a component raster's record of its Byte ranges is that of the statistics (which may
// hold more components than it has).
bool sameByteRanges(const std::string& recorded, const SavedTransform& saved) {
  const auto count = static_cast<size_t>(std::count(recorded.begin(), recorded.end(), ':'));
  if (count > saved.byteMinimum.size()) return false;
  const auto end = static_cast<int64_t>(count);
  return recorded == byteRangesText(saved.byteLow,
                                    {saved.byteMinimum.begin(), saved.byteMinimum.begin() + end},
                                    {saved.byteMaximum.begin(), saved.byteMaximum.begin() + end});
}

}  // namespace

void checkTransformOptions(const PcaOptions& options) {
  if (options.components < kSceneMaterials)
    throw Error("COMPONENTS",
                "the number of components must be positive, 0 (by variance), all or auto");
  if ((options.components == kSignalSubspace || options.components == kSceneMaterials) &&
      !options.savedTransform.empty())
    throw Error("COMPONENTS",
                "auto estimates the signal subspace of a fit: a saved transform has its own count");
  if (!(options.variancePercent > 0.0 && options.variancePercent <= 100.0))
    throw Error("VARIANCE", "the variance threshold must be a percentage in (0, 100]");
  checkCovarianceOptions(options);
}

TransformRun::TransformRun(const PcaOptions& options, const DeviceChoice& device,
                           Feedback& feedback, JobGroup& group)
    : CovarianceRun(options, device, feedback, group), pca_(options) {}

PcaResult TransformRun::run() {
  PcaResult result;
  static_cast<CovarianceResult&>(result) = runSteps();
  return result;
}

void TransformRun::readSavedTransform() {
  saved_ = hyperstream::readSavedTransform(pca_.savedTransform);
  if (pca_.noise || pca_.matrix != MatrixType::Covariance)
    throw Error("STATS",
                "a saved transform is applied as it was fitted: no noise direction or "
                "matrix to choose");
}

std::vector<InputFile> TransformRun::otherInputs() const {
  if (!saved_) return {};
  return {plainInputFile("STATS", pca_.savedTransform)};
}

PcaModel TransformRun::fitModel(const Moments& moments, const Moments& noise) {
  return pca_.noise ? fitMnf(moments, noise, result_.warnings)
                    : fitPca(moments, pca_.matrix, result_.warnings);
}

// Constant bands, found by the first pass, may lower what is available further.
void TransformRun::checkComponentCount() const {
  const auto selected = static_cast<int>(input_.bands.size());
  if (saved_ || pca_.components <= selected) return;
  throw Error("COMPONENTS", "asks for " + std::to_string(pca_.components) +
                                " components, but only " + std::to_string(selected) +
                                " bands are selected");
}

// By count, all, by SNR (MNF) or by cumulative variance; a saved transform's own count unless
// asked otherwise.
int TransformRun::countComponents() const {
  const PcaModel& model = result_.model;
  const int available = model.componentCount();
  if (saved_ && pca_.components == 0) return saved_->components;
  if (pca_.components < 0) return countedComponents(pca_.components);
  if (pca_.components == 0 && pca_.minSnr) {
    int reaching = 0;
    while (reaching < available && model.signal(reaching) >= *pca_.minSnr) ++reaching;
    if (reaching == 0)
      throw Error("MIN_SNR", QString("no component reaches an SNR of %1 (the largest is %2)")
                                 .arg(*pca_.minSnr)
                                 .arg(model.signal(0), 0, 'g', 4)
                                 .toStdString());
    return reaching;
  }
  if (pca_.components == 0) return model.componentsForVariance(pca_.variancePercent);
  if (pca_.components > available)
    throw Error("COMPONENTS", "asks for " + std::to_string(pca_.components) +
                                  " components, but there are only " + std::to_string(available) +
                                  " (non-constant selected bands)");
  return pca_.components;
}

int TransformRun::chooseComponentCount() {
  const PcaModel& model = result_.model;
  const int components = result_.components = countComponents();
  feedback_.info(QString("%1 valid of %2 pixels; %3 component(s) explain %4 % of the %5")
                     .arg(model.validPixels)
                     .arg(result_.totalPixels)
                     .arg(components)
                     .arg(model.cumulativePercent(components - 1), 0, 'f', 2)
                     .arg(pca_.noise ? "summed SNR" : "variance"));
  return components;
}

// Input nodata preserved (NaN when the input declares none but has non-finite pixels). Applying a
// saved transform, whether pixels are invalid is known only once projected: the fitting run's
// choice holds (so that the same image gives the same file), and float outputs write NaN for
// invalid pixels when the input declares no nodata.
OutputEncoding TransformRun::encode() {
  const bool someInvalid =
      saved_ ? saved_->hadOutputNodata : result_.model.validPixels < result_.totalPixels;
  OutputEncoding encoding;
  encoding.type = result_.outputType;
  const bool integer = !GDALDataTypeIsFloating(gdalType(encoding.type));
  if (saved_) encoding.nodata = integer ? 0.0 : std::numeric_limits<double>::quiet_NaN();
  setPlainNodata(encoding, fittedNodata(), someInvalid);
  return encoding;
}

void TransformRun::writeReports() {
  if (!pca_.statsJson.empty()) writeStatsJson(result_, pca_, pca_.statsJson);
  if (!pca_.tableCsv.empty()) writeTableCsv(result_, pca_.tableCsv);
  if (!pca_.htmlReport.empty()) writeHtmlReport(result_, pca_, pca_.htmlReport, reportViews());
}

void TransformRun::recordFit(GDALDataset& dataset, const OutputEncoding& encoding) const {
  const PcaModel& model = result_.model;
  dataset.SetMetadataItem(kTransformKey, model.transform == Transform::Mnf ? "mnf" : "pca");
  if (!model.id.empty()) dataset.SetMetadataItem(kFitIdKey, model.id.c_str());
  if (encoding.type == OutputType::Byte)
    dataset.SetMetadataItem(
        kByteRangesKey,
        byteRangesText(encoding.byteLow, result_.byteMinimum, result_.byteMaximum).c_str());
}

// Inverting: the component raster's record of its fit against the statistics.
void TransformRun::checkComponentsBelong() {
  GDALDataset& components = *input_.dataset;
  const PcaModel& model = saved_->model;
  const char* transform = components.GetMetadataItem(kTransformKey);
  const char* id = components.GetMetadataItem(kFitIdKey);
  const char* ranges = components.GetMetadataItem(kByteRangesKey);
  const std::string statsName = model.transform == Transform::Mnf ? "an MNF" : "a PCA";
  if (transform && std::string(transform) != (model.transform == Transform::Mnf ? "mnf" : "pca"))
    throw Error("STATS", "the components were written by " +
                             std::string(EQUAL(transform, "mnf") ? "an MNF" : "a PCA") +
                             ", the statistics are " + statsName +
                             "'s: give the statistics of the run that wrote them");
  if (id && !model.id.empty() && model.id != id)
    throw Error("STATS", "the components were written by another fit (" + std::string(id) +
                             ") than these statistics describe (" + model.id +
                             "): give the statistics of the run that wrote them");
  if (input_.info.type == GDT_Byte) {
    const auto count = static_cast<int>(input_.bands.size());
    if (!saved_->hasByteRanges || count > saved_->components)
      throw Error("STATS",
                  "the components are Byte, rescaled by the run that wrote them, but the "
                  "statistics hold no Byte ranges for " +
                      std::to_string(count) +
                      " of them: give the statistics of the run that wrote these Byte "
                      "components");
    if (ranges && !sameByteRanges(ranges, *saved_))
      throw Error("STATS",
                  "the components were rescaled to Byte with other ranges than these statistics "
                  "hold: give the statistics of the run that wrote them");
  }
  if (!transform && !id)
    feedback_.warning(
        "The components carry no record of the fit that wrote them (an older run, or another "
        "program): nothing shows that they belong to these statistics");
}

}  // namespace hyperstream
