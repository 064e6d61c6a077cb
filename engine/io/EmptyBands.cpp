#include "io/EmptyBands.h"

#include "io/Raster.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace hyperstream {

namespace {

// Whether a band has a valid sample among `rows` rows of float64 samples.
bool anyValid(const std::vector<double>& samples, double nodata) {
  const bool hasNodata = !std::isnan(nodata);
  return std::any_of(samples.begin(), samples.end(), [&](double value) {
    return std::isfinite(value) && !(hasNodata && value == nodata);
  });
}

// "bands 87-104 (1340-1450 nm) and 152": the 1-based file bands, runs joined.
std::string bandNames(const std::vector<int>& bands, const RasterInfo& info) {
  std::string text;
  for (size_t i = 0; i < bands.size();) {
    size_t j = i;
    while (j + 1 < bands.size() && bands[j + 1] == bands[j] + 1) ++j;
    if (!text.empty()) text += ", ";
    text += std::to_string(bands[i]) + (j > i ? "-" + std::to_string(bands[j]) : "");
    const double first = info.wavelengths[bands[i] - 1], last = info.wavelengths[bands[j] - 1];
    if (!std::isnan(first) && !std::isnan(last)) {
      char range[64];
      std::snprintf(range, sizeof range, j > i ? " (%g-%g" : " (%g", first, last);
      text += range +
              (info.wavelengthUnits.empty() ? std::string(")") : " " + info.wavelengthUnits + ")");
    }
    i = j + 1;
  }
  return (bands.size() > 1 ? "bands " : "band ") + text;
}

}  // namespace

std::vector<int> bandsWithoutValidSamples(GDALDataset& dataset, const std::vector<int>& bands,
                                          const std::vector<double>& nodata, int64_t ramBytes,
                                          const Feedback& feedback) {
  const int64_t width = dataset.GetRasterXSize(), height = dataset.GetRasterYSize();
  const int64_t windowRows =
      std::clamp<int64_t>(ramBytes / 4 / std::max<int64_t>(1, width * 8), 1, height);
  std::vector<int> empty;
  for (size_t i = 0; i < bands.size(); ++i) {
    bool valid = false;
    for (int64_t row = 0; row < height && !valid; row += windowRows) {
      if (feedback.isCanceled()) throw Canceled();
      const int64_t rows = std::min(windowRows, height - row);
      valid = anyValid(readWindowAsDouble(dataset, {bands[i]}, 0, row, width, rows, "INPUT"),
                       nodata[i]);
    }
    if (!valid) empty.push_back(bands[i]);
  }
  return empty;
}

namespace {

// The selected bands less `left`.
BandList bandsLess(const std::vector<int>& selected, const std::vector<int>& left) {
  BandList kept;
  for (int band : selected)
    if (std::find(left.begin(), left.end(), band) == left.end()) kept.emplace_back(band);
  return kept;
}

}  // namespace

BandList bandsWithValidSamples(const JobOptions& options, const NoValidPixel& error,
                               const std::string& job, Feedback& feedback) {
  JobInput input = openJobInput(options.input, options.bands, options.exclude, options.nodata, job);
  const std::vector<int> empty = bandsWithoutValidSamples(*input.dataset, input.bands, input.nodata,
                                                          options.ramBytes, feedback);
  if (empty.empty() || input.bands.size() - empty.size() < 2) throw error;
  BandList kept = bandsLess(input.bands, empty);
  feedback.warning(QString::fromStdString(
      bandNames(empty, input.info) +
      " hold no valid sample anywhere (every sample nodata or not finite), so every pixel was "
      "invalid: left out, the run done again with the other " +
      std::to_string(kept.size()) + " bands"));
  return kept;
}

BandList bandsTheTableGives(const JobOptions& options, const BandsNotGiven& error,
                            const std::string& job, Feedback& feedback) {
  JobInput input = openJobInput(options.input, options.bands, options.exclude, options.nodata, job);
  std::vector<double> nodata;
  for (int band : error.bands) {
    const auto at = std::find(input.bands.begin(), input.bands.end(), band);
    if (at == input.bands.end()) throw error;
    nodata.push_back(input.nodata[static_cast<size_t>(at - input.bands.begin())]);
  }
  const std::vector<int> empty =
      bandsWithoutValidSamples(*input.dataset, error.bands, nodata, options.ramBytes, feedback);
  if (empty.size() != error.bands.size() || input.bands.size() - empty.size() < 2) throw error;
  BandList kept = bandsLess(input.bands, empty);
  feedback.warning(QString::fromStdString(
      bandNames(empty, input.info) + " hold no valid sample anywhere and the " + error.parameter() +
      " table gives none for them (a table made from this image leaves them out): left out, " +
      "the other " + std::to_string(kept.size()) + " bands used"));
  return kept;
}

}  // namespace hyperstream
