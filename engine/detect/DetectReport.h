#pragma once
// The HTML report of a detection run (rx, detect; image-wide, per column or local): what was
// scored against what, each score band's histogram, preview and highest-scoring pixels (where to
// look first), and the targets' spectra beside the image's mean. Inline SVG and PNG only.

#include "detect/Detector.h"
#include "io/Raster.h"

#include <gdal_priv.h>

#include <QString>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hyperstream {

// What a job tells its report.
struct DetectionPage {
  QString heading;                                 // e.g. "Anomaly detection (RX)"
  std::vector<std::pair<QString, QString>> facts;  // the table's rows, after the input's
  RasterInfo input;                                // its name, size and wavelengths
  std::vector<int> bands;                          // selected, 1-based
  int64_t validPixels = 0;
  std::vector<Target> targets;  // on the selected bands (none for RX)
  bool absorption = false;      // targets are unit absorption spectra
  std::vector<double> mean;     // per selected band; empty: not shown
};

// One score band read back from the written raster: its valid scores' range, a histogram of
// `bins` bins over it and the `highest` largest scores with their pixels (row * width + column),
// largest first (the lower pixel first among equal scores).
struct ScoreSummary {
  int64_t valid = 0;
  double low = 0, high = 0;
  std::vector<int64_t> histogram;
  std::vector<std::pair<double, int64_t>> highest;
};
ScoreSummary summariseScores(GDALRasterBand& band, int bins = 60, int highest = 10);

// "Anomaly detection (RX)", "Matched filter", ...
QString detectorTitle(DetectMethod method);

QString detectionReport(const DetectionPage& page, GDALDataset& scores);
// Flushes `scores` (not yet committed), reads it back and writes the page atomically; throws
// Error("OUTPUT_HTML_FILE") on failure.
void writeDetectionReport(const DetectionPage& page, GDALDataset& scores, const std::string& path);

}  // namespace hyperstream
