#include "pca/SavedTransform.h"

#include "core/Error.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <limits>

namespace hyperstream {

namespace {

[[noreturn]] void malformed(const std::string& path, const std::string& what) {
  throw Error("STATS", path + " is not the statistics of a Hyperstream PCA or MNF run: " + what);
}

std::vector<double> numbers(const QJsonObject& json, const char* key, size_t count,
                            const std::string& path) {
  const QJsonArray array = json.value(key).toArray();
  if (static_cast<size_t>(array.size()) != count)
    malformed(path,
              std::string("\"") + key + "\" should hold " + std::to_string(count) + " numbers");
  std::vector<double> values;
  for (const QJsonValue value : array) {
    if (!value.isDouble()) malformed(path, std::string("\"") + key + "\" holds a non-number");
    values.push_back(value.toDouble());
  }
  return values;
}

// A bands x components matrix saved as one array of `bands` numbers per component.
std::vector<double> perComponent(const QJsonObject& json, const char* key, size_t bands,
                                 size_t components, const std::string& path) {
  const QJsonArray vectors = json.value(key).toArray();
  if (static_cast<size_t>(vectors.size()) != components)
    malformed(path, std::string("\"") + key + "\" should hold one array per eigenvalue");
  std::vector<double> matrix(bands * components, 0.0);
  for (size_t k = 0; k < components; ++k) {
    const QJsonArray column = vectors[static_cast<int>(k)].toArray();
    if (static_cast<size_t>(column.size()) != bands)
      malformed(path, std::string("\"") + key + "\" " + std::to_string(k + 1) +
                          " should have one number per band");
    for (size_t b = 0; b < bands; ++b)
      matrix[b * components + k] = column[static_cast<int>(b)].toDouble();
  }
  return matrix;
}

QJsonObject readObject(const std::string& path) {
  QFile file(QString::fromStdString(path));
  if (!file.open(QIODevice::ReadOnly))
    throw Error("STATS", "cannot read " + path + ": " + file.errorString().toStdString());
  QJsonParseError error{};
  const QJsonDocument document = QJsonDocument::fromJson(file.readAll(), &error);
  if (!document.isObject()) malformed(path, error.errorString().toStdString());
  return document.object();
}

// The fit: means, scaling, eigenvalues and vectors (components x bands in the JSON).
void readModel(const QJsonObject& json, const std::string& path, SavedTransform& saved) {
  PcaModel& model = saved.model;
  const size_t bands = saved.bands.size();
  model.bands = static_cast<int>(bands);
  model.transform = json.value("transform").toString() == "mnf" ? Transform::Mnf : Transform::Pca;
  const QString matrix = json.value("matrix").toString();
  if (matrix != "covariance" && matrix != "correlation") malformed(path, "no \"matrix\"");
  model.matrix = matrix == "correlation" ? MatrixType::Correlation : MatrixType::Covariance;
  model.validPixels = static_cast<int64_t>(json.value("valid_pixels").toDouble());
  model.mean = numbers(json, "mean", bands, path);
  model.stddev = numbers(json, "stddev", bands, path);
  const QJsonArray eigenvalues = json.value("eigenvalues").toArray();
  model.eigenvalues = numbers(json, "eigenvalues", static_cast<size_t>(eigenvalues.size()), path);
  const size_t all = model.eigenvalues.size();
  if (all == 0) malformed(path, "no eigenvalues");
  model.eigenvectors = perComponent(json, "eigenvectors", bands, all, path);
  if (model.transform == Transform::Mnf) {
    model.noiseStddev = numbers(json, "noise_stddev", bands, path);
    // Older runs saved no inverse loadings: their transform applies but does not invert.
    if (json.contains("inverse_loadings"))
      model.inverseLoadings = perComponent(json, "inverse_loadings", bands, all, path);
  }
  for (const QJsonValue band : json.value("constant_bands").toArray()) {
    const auto at = std::find(saved.bands.begin(), saved.bands.end(), band.toInt());
    if (at != saved.bands.end())
      model.constantBands.push_back(static_cast<int>(at - saved.bands.begin()));
  }
}

void readByteRanges(const QJsonObject& json, const std::string& path, SavedTransform& saved) {
  if (!json.contains("byte_rescale")) return;
  const QJsonObject rescale = json.value("byte_rescale").toObject();
  const auto components = static_cast<size_t>(saved.components);
  saved.byteMinimum = numbers(rescale, "minimum", components, path);
  saved.byteMaximum = numbers(rescale, "maximum", components, path);
  saved.byteLow = rescale.value("low").toDouble();
  saved.hasByteRanges = true;
}

}  // namespace

SavedTransform readSavedTransform(const std::string& path) {
  const QJsonObject json = readObject(path);
  SavedTransform saved;
  for (const QJsonValue band : json.value("bands").toArray()) saved.bands.push_back(band.toInt());
  if (saved.bands.empty()) malformed(path, "no \"bands\"");
  saved.components = json.value("components").toInt();
  readModel(json, path, saved);
  if (json.contains("noise_direction"))
    saved.noise = parseNoiseDirection(json.value("noise_direction").toString().toStdString());
  saved.hadOutputNodata = !json.value("output_nodata").isNull();
  saved.inputType = json.value("input_type").toString().toStdString();
  for (const QJsonValue description : json.value("band_descriptions").toArray())
    saved.bandDescriptions.push_back(description.toString().toStdString());
  for (const QJsonValue value : json.value("nodata").toArray())
    saved.nodata.push_back(value.isDouble() ? value.toDouble()
                                            : std::numeric_limits<double>::quiet_NaN());
  readByteRanges(json, path, saved);
  return saved;
}

}  // namespace hyperstream
