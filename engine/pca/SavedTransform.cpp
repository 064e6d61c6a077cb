#include "pca/SavedTransform.h"

#include "core/BlasThreads.h"
#include "core/Error.h"
#include "io/InputFiles.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <gdal.h>

#include <cblas.h>
#include <algorithm>
#include <cmath>
#include <limits>

namespace hyperstream {

namespace {

// The most bands a saved transform can have been fitted on (as the command line allows).
constexpr double kMaxBands = 1 << 20;

std::string numberText(double value) {
  return QString::number(value, 'g', 7).toStdString();
}

// A field of the statistics JSON, read strictly: a wrong type, count or value is an Error("STATS")
// naming the file and the field, never a default.
class StatsFields {
 public:
  StatsFields(const std::string& path, QJsonObject json) : path_(path), json_(std::move(json)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw Error("STATS", "'" + path_ + "' is not the statistics of a Hyperstream PCA or MNF run: " +
                             (field.empty() ? "" : "\"" + field + "\" ") + what);
  }
  bool has(const char* key) const { return json_.contains(key) && !json_.value(key).isNull(); }

  // A whole number in [smallest, largest].
  int64_t integer(const char* key, double smallest, double largest) const {
    return wholeNumber(json_.value(key), key, smallest, largest);
  }
  int64_t wholeNumber(const QJsonValue& value, const std::string& field, double smallest,
                      double largest) const {
    if (!value.isDouble())
      fail(field, value.isUndefined() ? "is missing" : "should be a number, not " + text(value));
    const double number = value.toDouble();
    if (number != std::floor(number) || number < smallest || number > largest)
      fail(field, "should be a whole number from " + std::to_string(int64_t(smallest)) + " to " +
                      std::to_string(int64_t(largest)) + ", not " + text(value));
    return static_cast<int64_t>(number);
  }
  std::string string(const char* key) const {
    const QJsonValue value = json_.value(key);
    if (!value.isString()) fail(key, value.isUndefined() ? "is missing" : "should be a text");
    return value.toString().toStdString();
  }
  // `count` finite numbers (any count when `count` is negative).
  std::vector<double> numbers(const char* key, int64_t count) const {
    return numbers(json_.value(key), key, count);
  }
  std::vector<double> numbers(const QJsonValue& value, const std::string& field,
                              int64_t count) const {
    if (!value.isArray())
      fail(field, value.isUndefined() ? "is missing" : "should be an array of numbers");
    const QJsonArray array = value.toArray();
    if (count >= 0 && array.size() != count)
      fail(field, "should hold " + std::to_string(count) + " numbers, not " +
                      std::to_string(array.size()));
    std::vector<double> values;
    values.reserve(static_cast<size_t>(array.size()));
    for (const QJsonValue item : array) {
      if (!item.isDouble() || !std::isfinite(item.toDouble()))
        fail(field, "holds " + text(item) + " at position " + std::to_string(values.size() + 1) +
                        ", not a finite number");
      values.push_back(item.toDouble());
    }
    return values;
  }
  // A bands x components matrix (row-major) saved as one array of `bands` numbers per component.
  std::vector<double> perComponent(const char* key, int64_t bands, int64_t components) const {
    const QJsonValue value = json_.value(key);
    if (!value.isArray() || value.toArray().size() != components)
      fail(key, "should hold one array per eigenvalue (" + std::to_string(components) + ")");
    const QJsonArray vectors = value.toArray();
    std::vector<double> matrix(static_cast<size_t>(bands * components), 0.0);
    for (int64_t k = 0; k < components; ++k) {
      const std::vector<double> column = numbers(
          vectors[static_cast<int>(k)], std::string(key) + " " + std::to_string(k + 1), bands);
      for (int64_t b = 0; b < bands; ++b)
        matrix[static_cast<size_t>(b * components + k)] = column[b];
    }
    return matrix;
  }
  const QJsonObject& json() const { return json_; }
  const std::string& path() const { return path_; }

 private:
  static std::string text(const QJsonValue& value) {
    if (value.isString()) return "\"" + value.toString().left(40).toStdString() + "\"";
    if (value.isDouble()) return QString::number(value.toDouble(), 'g', 6).toStdString();
    if (value.isNull()) return "null";
    if (value.isBool()) return value.toBool() ? "true" : "false";
    return value.isArray() ? "an array" : "an object";
  }

  std::string path_;
  QJsonObject json_;
};

QJsonObject parseObject(const QByteArray& text, const std::string& path) {
  QJsonParseError error{};
  const QJsonDocument document = QJsonDocument::fromJson(text, &error);
  if (error.error != QJsonParseError::NoError)
    throw Error("STATS", "'" + path + "' is not a JSON file: " + error.errorString().toStdString() +
                             " at byte " + std::to_string(error.offset));
  if (!document.isObject())
    throw Error("STATS", "'" + path +
                             "' is not the statistics of a Hyperstream PCA or MNF run: it holds "
                             "a JSON array, not an object");
  return document.object();
}

// Per band, a positive number or null (NaN); an absent list is all NaN.
std::vector<double> optionalPositives(const StatsFields& fields, const char* key, size_t count) {
  const QJsonArray array = fields.json().value(key).toArray();
  if (!fields.has(key)) return std::vector<double>(count, std::nan(""));
  if (static_cast<size_t>(array.size()) != count)
    fields.fail(key, "should hold one value (or null) per band");
  std::vector<double> values;
  for (const QJsonValue value : array) {
    if (!value.isNull() &&
        !(value.isDouble() && value.toDouble() > 0 && std::isfinite(value.toDouble())))
      fields.fail(key, "holds a value that is neither a positive number nor null");
    values.push_back(value.isDouble() ? value.toDouble() : std::nan(""));
  }
  return values;
}

// The bands' wavelengths, FWHM and bad-band flags, for the inverse's output.
void readSpectra(const StatsFields& fields, SavedTransform& saved) {
  const size_t count = saved.bands.size();
  saved.spectra.wavelengths = optionalPositives(fields, "wavelengths_nm", count);
  saved.spectra.fwhm = optionalPositives(fields, "fwhm_nm", count);
  if (!fields.has("bbl")) return;
  const QJsonArray flags = fields.json().value("bbl").toArray();
  if (static_cast<size_t>(flags.size()) != count)
    fields.fail("bbl", "should hold a 0 or 1 per band");
  for (const QJsonValue flag : flags) {
    if (flag != QJsonValue(0) && flag != QJsonValue(1))
      fields.fail("bbl", "should hold a 0 or 1 per band");
    saved.spectra.good.push_back(flag == QJsonValue(1));
  }
}

// The image it was fitted on: bands, type, descriptions, nodata.
void readImage(const StatsFields& fields, SavedTransform& saved) {
  const QJsonValue bands = fields.json().value("bands");
  if (!bands.isArray() || bands.toArray().isEmpty())
    fields.fail("bands", "should list the band numbers the transform was fitted on");
  for (const QJsonValue band : bands.toArray()) {
    const int number = static_cast<int>(fields.wholeNumber(band, "bands", 1, kMaxBands));
    if (std::find(saved.bands.begin(), saved.bands.end(), number) != saved.bands.end())
      fields.fail("bands", "lists band " + std::to_string(number) + " twice");
    saved.bands.push_back(number);
  }
  const size_t count = saved.bands.size();
  if (fields.has("input_type")) {
    saved.inputType = fields.string("input_type");
    if (GDALGetDataTypeByName(saved.inputType.c_str()) == GDT_Unknown)
      fields.fail("input_type", "names no GDAL data type: '" + saved.inputType + "'");
  }
  for (const QJsonValue description : fields.json().value("band_descriptions").toArray())
    saved.bandDescriptions.push_back(description.toString().toStdString());
  saved.bandDescriptions.resize(count);
  const QJsonArray nodata = fields.json().value("nodata").toArray();
  if (!nodata.isEmpty() && static_cast<size_t>(nodata.size()) != count)
    fields.fail("nodata", "should hold one value (or null) per band");
  for (const QJsonValue value : nodata) {
    if (!value.isNull() && !value.isDouble())
      fields.fail("nodata", "holds a value that is neither a number nor null");
    saved.nodata.push_back(value.isDouble() ? value.toDouble()
                                            : std::numeric_limits<double>::quiet_NaN());
  }
  readSpectra(fields, saved);
}

// The values a band of the fitted image's type can take: [lowest, highest].
void typeRange(const std::string& type, double& lowest, double& highest) {
  lowest = -std::numeric_limits<double>::max();
  highest = std::numeric_limits<double>::max();
  const GDALDataType gdal = GDALGetDataTypeByName(type.c_str());
  if (gdal == GDT_Float32) highest = std::numeric_limits<float>::max(), lowest = -highest;
  if (gdal == GDT_Unknown || GDALDataTypeIsFloating(gdal)) return;
  const int bits = GDALGetDataTypeSizeBits(gdal);
  const bool isSigned = GDALDataTypeIsSigned(gdal);
  lowest = isSigned ? -std::ldexp(1.0, bits - 1) : 0.0;
  highest = std::ldexp(1.0, isSigned ? bits - 1 : bits) - 1;
}

// Means, spreads and ranges within what the fitted image's type holds, so that centring and
// projecting cannot overflow.
void checkBandStatistics(const StatsFields& fields, const SavedTransform& saved) {
  const PcaModel& model = saved.model;
  double lowest = 0, highest = 0;
  typeRange(saved.inputType, lowest, highest);
  for (int b = 0; b < model.bands; ++b) {
    const std::string band = " of band " + std::to_string(saved.bands[b]);
    if (model.mean[b] < lowest || model.mean[b] > highest)
      fields.fail("mean", "holds " + numberText(model.mean[b]) + band + ", beyond what " +
                              saved.inputType + " holds");
    if (model.stddev[b] < 0 || model.stddev[b] > highest - lowest)
      fields.fail("stddev", "holds " + numberText(model.stddev[b]) + band +
                                ", not a spread the fitted image can have");
    if (model.minimum.empty()) continue;
    if (!(model.minimum[b] <= model.maximum[b]) || model.minimum[b] < lowest ||
        model.maximum[b] > highest)
      fields.fail("minimum", "and \"maximum\"" + band + " are not a range of " + saved.inputType);
  }
}

// Each component's largest |value| over the values the fitted image can hold (its ranges, or
// those of an integer type) fits float64.
void checkBounded(const StatsFields& fields, const SavedTransform& saved) {
  const PcaModel& model = saved.model;
  double lowest = 0, highest = 0;
  typeRange(saved.inputType, lowest, highest);
  const bool known = !model.minimum.empty() || std::isfinite(highest - lowest);
  if (!known) return;  // a Float64 image of unknown ranges: anything fits
  std::vector<double> spread(static_cast<size_t>(model.bands));
  for (int b = 0; b < model.bands; ++b) {
    const double low = model.minimum.empty() ? lowest : model.minimum[b];
    const double high = model.maximum.empty() ? highest : model.maximum[b];
    spread[b] = std::max(high - model.mean[b], model.mean[b] - low);
  }
  const int all = model.componentCount();
  const Projection projection = model.projection(all);
  for (int k = 0; k < all; ++k) {
    double bound = 0;
    for (int b = 0; b < model.bands; ++b)
      bound += std::abs(projection.weights[static_cast<size_t>(b) * all + k]) * spread[b];
    if (!(bound < std::numeric_limits<double>::max() / 1e3))
      fields.fail("eigenvectors",
                  std::to_string(k + 1) + " would overflow float64 on the fitted image's values");
  }
}

// W^T A = I for the projection's weights W and the inverse loadings A of every component: PCA's
// loadings orthonormal, MNF's vectors N-orthonormal. Each entry within 1e-6 of the identity's,
// relative to the size of the products it sums.
void checkOrthonormal(const StatsFields& fields, const PcaModel& model) {
  const int bands = model.bands, all = model.componentCount();
  const BlasThreadsHere threads(fitBlasThreads(bands));
  const Projection projection = model.projection(all);     // bands x all
  const std::vector<double> restore = model.restore(all);  // all x bands
  std::vector<double> product(static_cast<size_t>(all) * all), size(product.size());
  std::vector<double> absWeights(projection.weights.size()), absRestore(restore.size());
  std::transform(projection.weights.begin(), projection.weights.end(), absWeights.begin(),
                 [](double v) { return std::abs(v); });
  std::transform(restore.begin(), restore.end(), absRestore.begin(),
                 [](double v) { return std::abs(v); });
  cblas_dgemm(CblasRowMajor, CblasTrans, CblasTrans, all, all, bands, 1.0,
              projection.weights.data(), all, restore.data(), bands, 0.0, product.data(), all);
  cblas_dgemm(CblasRowMajor, CblasTrans, CblasTrans, all, all, bands, 1.0, absWeights.data(), all,
              absRestore.data(), bands, 0.0, size.data(), all);
  constexpr double kTolerance = 1e-6;
  for (int k = 0; k < all; ++k)
    for (int j = 0; j < all; ++j) {
      const size_t at = static_cast<size_t>(k) * all + j;
      const double expected = k == j ? 1.0 : 0.0;
      if (std::abs(product[at] - expected) <= kTolerance * std::max(1.0, size[at])) continue;
      fields.fail("eigenvectors",
                  "are not " +
                      std::string(model.transform == Transform::Mnf
                                      ? "noise-orthonormal with \"inverse_loadings\""
                                      : "orthonormal") +
                      ": vectors " + std::to_string(k + 1) + " and " + std::to_string(j + 1) +
                      " give " + numberText(product[at]) + " where " + numberText(expected) +
                      " was expected (edited by hand?)");
    }
}

// The fit: means, scaling, eigenvalues and vectors (components x bands in the JSON).
void readModel(const StatsFields& fields, SavedTransform& saved) {
  PcaModel& model = saved.model;
  const auto bands = static_cast<int64_t>(saved.bands.size());
  model.bands = static_cast<int>(bands);
  const std::string transform = fields.has("transform") ? fields.string("transform") : "pca";
  if (transform != "pca" && transform != "mnf")
    fields.fail("transform", "is pca or mnf, not '" + transform + "'");
  model.transform = transform == "mnf" ? Transform::Mnf : Transform::Pca;
  const std::string matrix = fields.string("matrix");
  if (matrix != "covariance" && matrix != "correlation")
    fields.fail("matrix", "is covariance or correlation, not '" + matrix + "'");
  model.matrix = matrix == "correlation" ? MatrixType::Correlation : MatrixType::Covariance;
  if (model.transform == Transform::Mnf && model.matrix == MatrixType::Correlation)
    fields.fail("matrix", "is covariance for an MNF");
  if (fields.has("valid_pixels"))
    model.validPixels = fields.integer("valid_pixels", 0, std::ldexp(1.0, 62));
  model.mean = fields.numbers("mean", bands);
  model.stddev = fields.numbers("stddev", bands);
  if (fields.has("minimum") || fields.has("maximum")) {
    model.minimum = fields.numbers("minimum", bands);
    model.maximum = fields.numbers("maximum", bands);
  }
  model.eigenvalues = fields.numbers("eigenvalues", -1);
  const auto all = static_cast<int64_t>(model.eigenvalues.size());
  if (all == 0 || all > bands)
    fields.fail("eigenvalues", "should hold one value per band fitted (at most " +
                                   std::to_string(bands) + "), not " + std::to_string(all));
  for (int64_t k = 0; k < all; ++k)
    if (model.eigenvalues[k] < 0 || (k > 0 && model.eigenvalues[k] > model.eigenvalues[k - 1]))
      fields.fail("eigenvalues", "should be 0 or more, in descending order");
  model.eigenvectors = fields.perComponent("eigenvectors", bands, all);
  if (model.transform == Transform::Mnf) {
    model.noiseStddev = fields.numbers("noise_stddev", bands);
    // Older runs saved no inverse loadings: their transform applies but does not invert.
    if (fields.has("inverse_loadings"))
      model.inverseLoadings = fields.perComponent("inverse_loadings", bands, all);
  }
  for (const QJsonValue band : fields.json().value("constant_bands").toArray()) {
    const auto number = static_cast<int>(fields.wholeNumber(band, "constant_bands", 1, kMaxBands));
    const auto at = std::find(saved.bands.begin(), saved.bands.end(), number);
    if (at == saved.bands.end())
      fields.fail("constant_bands",
                  "lists band " + std::to_string(number) + ", not one of \"bands\"");
    model.constantBands.push_back(static_cast<int>(at - saved.bands.begin()));
  }
  if (static_cast<size_t>(all) + model.constantBands.size() != saved.bands.size())
    fields.fail("eigenvalues", "should hold one value per band that is not constant (" +
                                   std::to_string(bands - model.constantBands.size()) + ")");
  checkBandStatistics(fields, saved);
  if (model.transform == Transform::Pca || !model.inverseLoadings.empty())
    checkOrthonormal(fields, model);
  checkBounded(fields, saved);
}

void readByteRanges(const StatsFields& fields, SavedTransform& saved) {
  if (!fields.has("byte_rescale")) return;
  const QJsonValue value = fields.json().value("byte_rescale");
  if (!value.isObject()) fields.fail("byte_rescale", "should be an object");
  const StatsFields rescale(fields.path(), value.toObject());
  saved.byteMinimum = rescale.numbers("minimum", saved.components);
  saved.byteMaximum = rescale.numbers("maximum", saved.components);
  for (int k = 0; k < saved.components; ++k)
    if (!(saved.byteMinimum[k] <= saved.byteMaximum[k]))
      fields.fail("byte_rescale",
                  "has a minimum above its maximum for component " + std::to_string(k + 1));
  saved.byteLow = static_cast<double>(rescale.integer("low", 0, 1));
  saved.hasByteRanges = true;
}

}  // namespace

SavedTransform readSavedTransform(const std::string& path) {
  return parseSavedTransform(readInputFile(path, "STATS", kLargestTextInput), path);
}

SavedTransform parseSavedTransform(const QByteArray& text, const std::string& path) {
  const StatsFields fields(path, parseObject(text, path));
  SavedTransform saved;
  readImage(fields, saved);
  readModel(fields, saved);
  saved.components = static_cast<int>(
      fields.integer("components", 1, static_cast<double>(saved.model.componentCount())));
  if (fields.has("noise_direction")) {
    try {
      saved.noise = parseNoiseDirection(fields.string("noise_direction"));
    } catch (const Error& error) {
      fields.fail("noise_direction", error.what());
    }
  }
  saved.hadOutputNodata = fields.has("output_nodata");
  if (fields.has("fit_id")) saved.model.id = fields.string("fit_id");
  readByteRanges(fields, saved);
  return saved;
}

}  // namespace hyperstream
