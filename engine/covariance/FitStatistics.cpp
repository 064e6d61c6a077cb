#include "covariance/FitStatistics.h"

#include "core/Error.h"
#include "io/SpectralMetadata.h"

#include <QJsonArray>
#include <QJsonDocument>

#include <algorithm>
#include <cmath>

namespace hyperstream {

namespace {

QJsonArray toArray(const std::vector<double>& values) {
  QJsonArray array;
  for (double v : values) array.append(v);
  return array;
}

// The input: its size, the bands used, their descriptions and nodata values.
void addInput(QJsonObject& json, const CovarianceResult& result, const CovarianceOptions& options) {
  json["software"] = "Hyperstream " HYPERSTREAM_VERSION;
  json["input"] = QString::fromStdString(options.input);
  json["output"] = QString::fromStdString(options.output);
  json["width"] = static_cast<double>(result.input.width);
  json["height"] = static_cast<double>(result.input.height);
  QJsonArray bands, descriptions, nodata;
  for (int b : result.bands) {
    bands.append(b);
    descriptions.append(QString::fromStdString(result.input.bandDescriptions[b - 1]));
    const double value = result.input.nodata[b - 1];
    nodata.append(std::isnan(value) ? QJsonValue() : QJsonValue(value));
  }
  json["input_type"] = GDALGetDataTypeName(result.input.type);
  json["bands"] = bands;
  json["band_descriptions"] = descriptions;
  json["nodata"] = nodata;
  // What the inverse transform's output carries again (null where a band has none).
  const BandSpectra spectra = bandSpectraOf(result.input.wavelengths, result.input.fwhm,
                                            result.input.goodBands, result.bands);
  const auto orNull = [](const std::vector<double>& values) {
    QJsonArray array;
    for (const double v : values) array.append(std::isfinite(v) ? QJsonValue(v) : QJsonValue());
    return array;
  };
  if (std::any_of(spectra.wavelengths.begin(), spectra.wavelengths.end(),
                  [](double v) { return std::isfinite(v); })) {
    json["wavelengths_nm"] = orNull(spectra.wavelengths);
    json["fwhm_nm"] = orNull(spectra.fwhm);
  }
  if (!spectra.good.empty()) {
    QJsonArray good;
    for (const bool g : spectra.good) good.append(g ? 1 : 0);
    json["bbl"] = good;
  }
}

// A bands x components matrix of the model (row-major) as one array of bands per component.
QJsonArray perComponent(const PcaModel& model, const std::vector<double>& matrix) {
  const int all = model.componentCount();
  QJsonArray components;
  for (int k = 0; k < all; ++k) {
    QJsonArray column;
    for (int b = 0; b < model.bands; ++b) column.append(matrix[static_cast<size_t>(b) * all + k]);
    components.append(column);
  }
  return components;
}

// MNF: what tells it from a PCA (whose statistics have no "transform"): the SNR of each
// component (eigenvalue - 1) and the noise estimate's standard deviations.
void addNoise(QJsonObject& json, const PcaModel& model) {
  json["transform"] = "mnf";
  QJsonArray snr;
  for (int k = 0; k < model.componentCount(); ++k) snr.append(model.signal(k));
  json["snr"] = snr;
  json["noise_stddev"] = toArray(model.noiseStddev);
  json["inverse_loadings"] = perComponent(model, model.inverseLoadings);
}

// The fit: everything needed to apply the same transform to another image.
void addModel(QJsonObject& json, const PcaModel& model, const std::vector<int>& bands) {
  const int all = model.componentCount();
  QJsonArray constant;
  for (int b : model.constantBands) constant.append(bands[b]);
  json["transform"] = "pca";  // addNoise makes it "mnf"
  if (!model.id.empty()) json["fit_id"] = QString::fromStdString(model.id);
  json["matrix"] = QString::fromStdString(matrixTypeName(model.matrix));
  json["valid_pixels"] = static_cast<double>(model.validPixels);
  json["constant_bands"] = constant;
  json["mean"] = toArray(model.mean);
  json["stddev"] = toArray(model.stddev);
  if (!model.minimum.empty()) {
    json["minimum"] = toArray(model.minimum);
    json["maximum"] = toArray(model.maximum);
  }
  json["eigenvalues"] = toArray(model.eigenvalues);
  QJsonArray explained, cumulative;
  for (int k = 0; k < all; ++k) {
    explained.append(model.explainedPercent(k));
    cumulative.append(model.cumulativePercent(k));
  }
  json["explained_percent"] = explained;
  json["cumulative_percent"] = cumulative;
  json["eigenvectors"] = perComponent(model, model.eigenvectors);
  if (model.transform == Transform::Mnf) addNoise(json, model);
}

// The output: how many components, their type, nodata and Byte rescale.
void addOutput(QJsonObject& json, const CovarianceResult& result) {
  json["components"] = result.components;
  json["output_type"] = QString::fromStdString(outputTypeName(result.outputType));
  json["output_nodata"] = result.hasOutputNodata && !std::isnan(result.outputNodata)
                              ? QJsonValue(result.outputNodata)
                              : (result.hasOutputNodata ? QJsonValue("nan") : QJsonValue());
  if (result.outputType == OutputType::Byte && !result.byteMinimum.empty()) {
    QJsonObject rescale;
    rescale["low"] = result.hasOutputNodata ? 1 : 0;
    rescale["high"] = 255;
    rescale["minimum"] = toArray(result.byteMinimum);
    rescale["maximum"] = toArray(result.byteMaximum);
    json["byte_rescale"] = rescale;
  }
}

// How the run went: the device, the memory plan and the stages' times.
void addRun(QJsonObject& json, const CovarianceResult& result) {
  json["backend"] = QString::fromStdString(result.backend);
  json["resident"] = result.resident;
  json["strip_rows"] = static_cast<double>(result.stripRows);
  json["band_major_strips"] = result.bandMajor;
  QJsonObject seconds;
  seconds["setup"] = result.seconds.setup;
  seconds["read"] = result.seconds.read;
  seconds["moments"] = result.seconds.moments;
  seconds["eigen"] = result.seconds.eigen;
  seconds["byte_range"] = result.seconds.range;
  seconds["projection"] = result.seconds.projection;
  seconds["write"] = result.seconds.write;
  seconds["total"] = result.seconds.total;
  json["seconds"] = seconds;
  const DeviceTimes& device = result.seconds.device;
  if (device.moments > 0) {
    // The GPU's own clock: copies and kernels (they overlap the host's stages above).
    QJsonObject gpu;
    gpu["resident"] = result.deviceResident;
    gpu["upload_seconds"] = device.upload;
    gpu["upload_bytes"] = static_cast<double>(device.uploadBytes);
    gpu["moments_seconds"] = device.moments;
    gpu["byte_range_seconds"] = device.range;
    gpu["projection_seconds"] = device.projection;
    gpu["download_seconds"] = device.download;
    gpu["download_bytes"] = static_cast<double>(device.downloadBytes);
    json["gpu"] = gpu;
  }
}

// HySime's dimension, its per-band noise and the virtual dimensionality.
void addSubspace(QJsonObject& json, const SignalSubspace& subspace) {
  QJsonObject estimate;
  estimate["hysime_dimension"] = subspace.dimension;
  estimate["hysime_noise_variance"] = toArray(subspace.noiseVariance);
  QJsonObject vd;
  for (size_t t = 0; t < SignalSubspace::kFalseAlarmRates.size(); ++t)
    vd[QString::number(SignalSubspace::kFalseAlarmRates[t], 'g', 1)] =
        subspace.virtualDimensionality[t];
  estimate["virtual_dimensionality_hfc"] = vd;
  json["signal_subspace"] = estimate;
}

}  // namespace

QJsonObject statsJson(const CovarianceResult& result, const CovarianceOptions& options) {
  QJsonObject json;
  addInput(json, result, options);
  addModel(json, result.model, result.bands);
  if (result.subspace) addSubspace(json, *result.subspace);
  if (result.noise)
    json["noise_direction"] = QString::fromStdString(noiseDirectionName(*result.noise));
  json["total_pixels"] = static_cast<double>(result.totalPixels);
  addOutput(json, result);
  addRun(json, result);
  return json;
}

void writeStatsJson(const CovarianceResult& result, const CovarianceOptions& options,
                    const std::string& path) {
  saveFileAtomically(path,
                     QJsonDocument(statsJson(result, options)).toJson(QJsonDocument::Indented),
                     "OUTPUT_STATS");
}

void writeTableCsv(const CovarianceResult& result, const std::string& path) {
  const PcaModel& model = result.model;
  const bool mnf = model.transform == Transform::Mnf;
  // MNF: the SNR beside the eigenvalue; the percentages are shares of the summed SNR.
  QByteArray csv = mnf ? "component,eigenvalue,snr," : "component,eigenvalue,";
  csv += "explained_percent,cumulative_percent,in_output\n";
  for (int k = 0; k < model.componentCount(); ++k) {
    QString row =
        QString(mnf ? "MNF%1,%2," : "PC%1,%2,").arg(k + 1).arg(model.eigenvalues[k], 0, 'g', 17);
    if (mnf) row += QString::number(model.signal(k), 'g', 17) + ',';
    row += QString("%1,%2,%3\n")
               .arg(model.explainedPercent(k), 0, 'g', 10)
               .arg(model.cumulativePercent(k), 0, 'g', 10)
               .arg(k < result.components ? "yes" : "no");
    csv += row.toUtf8();
  }
  saveFileAtomically(path, csv, "OUTPUT_TABLE");
}

}  // namespace hyperstream
