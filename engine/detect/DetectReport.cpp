#include "detect/DetectReport.h"

#include "io/HtmlPage.h"
#include "io/QuickLook.h"
#include "io/SvgPlot.h"
#include "io/TextFile.h"

#include <QObject>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

namespace hyperstream {

namespace {

// Previews and histograms for at most this many score bands (a band per target).
constexpr int kBandsShown = 8;

// Calls f(pixel, value) for each valid value of the band (finite, not nodata), rows in order.
void forEachScore(GDALRasterBand& band, const std::function<void(int64_t, double)>& f) {
  const int64_t width = band.GetXSize(), height = band.GetYSize();
  int hasNodata = 0;
  const double nodata = band.GetNoDataValue(&hasNodata);
  const int64_t rowsPerRead =
      std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(1, width));
  std::vector<double> values;
  for (int64_t row = 0; row < height; row += rowsPerRead) {
    const int64_t rows = std::min(rowsPerRead, height - row);
    values.resize(static_cast<size_t>(rows * width));
    if (band.RasterIO(GF_Read, 0, static_cast<int>(row), static_cast<int>(width),
                      static_cast<int>(rows), values.data(), static_cast<int>(width),
                      static_cast<int>(rows), GDT_Float64, 0, 0) != CE_None)
      return;
    for (int64_t p = 0; p < rows * width; ++p) {
      const double v = values[p];
      if (std::isfinite(v) && !(hasNodata && v == nodata)) f(row * width + p, v);
    }
  }
}

QString histogramPlot(const ScoreSummary& summary, const QString& name) {
  const auto bins = static_cast<int>(summary.histogram.size());
  const double step = (summary.high - summary.low) / bins;
  std::vector<double> x, y;
  double largest = 1;
  for (int b = 0; b < bins; ++b) {
    x.push_back(summary.low + (b + 0.5) * step);
    const auto count = static_cast<double>(summary.histogram[b]);
    y.push_back(count > 0 ? count : std::nan(""));  // a log axis has no 0
    largest = std::max(largest, count);
  }
  svg::Plot plot(QObject::tr("Scores of %1").arg(name),
                 {QObject::tr("score"), summary.low, summary.high},
                 {QObject::tr("pixels per bin"), 1, largest, svg::Axis::Scale::Log});
  plot.line(x, y, "#b2182b", true);
  return plot.svg();
}

QString highestTable(const ScoreSummary& summary, int64_t width) {
  QString table = QObject::tr(
      "<table><tr><th>rank</th><th>row</th><th>column</th>"
      "<th>score</th></tr>");
  for (size_t k = 0; k < summary.highest.size(); ++k)
    table += QString("<tr><td>%1</td><td>%2</td><td>%3</td><td>%4</td></tr>")
                 .arg(k + 1)
                 .arg(summary.highest[k].second / width)
                 .arg(summary.highest[k].second % width)
                 .arg(svg::number(summary.highest[k].first, 6));
  return table + "</table>";
}

// The targets on the image's bands beside its mean (spectra), or the absorption spectra alone.
QString targetsPlot(const DetectionPage& page) {
  const svg::BandAxis axis(page.bands, page.input.wavelengths, page.input.wavelengthUnits);
  double lo = 0, hi = 0;
  auto widen = [&](const std::vector<double>& values) {
    for (const double v : values) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  };
  const bool withMean = !page.absorption && !page.mean.empty();
  if (withMean) widen(page.mean);
  for (const Target& target : page.targets) widen(target.spectrum);
  svg::Plot plot(page.absorption ? QObject::tr("Unit absorption spectra")
                                 : QObject::tr("Targets and the image's mean"),
                 axis.axis(),
                 {page.absorption ? QObject::tr("absorption per unit") : QObject::tr("value"), lo,
                  hi > lo ? hi : lo + 1});
  QStringList names;
  for (size_t k = 0; k < page.targets.size(); ++k) {
    plot.line(axis.x(), axis.values(page.targets[k].spectrum), svg::colour(static_cast<int>(k)));
    names << QString::fromStdString(page.targets[k].name);
  }
  if (withMean) {
    plot.line(axis.x(), axis.values(page.mean), svg::colour(static_cast<int>(page.targets.size())));
    names << QObject::tr("image mean");
  }
  plot.legend(names);
  return plot.svg();
}

}  // namespace

ScoreSummary summariseScores(GDALRasterBand& band, int bins, int highest) {
  ScoreSummary summary;
  summary.low = std::numeric_limits<double>::infinity();
  summary.high = -summary.low;
  auto later = [](const std::pair<double, int64_t>& a, const std::pair<double, int64_t>& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  forEachScore(band, [&](int64_t pixel, double v) {
    ++summary.valid;
    summary.low = std::min(summary.low, v);
    summary.high = std::max(summary.high, v);
    // A heap of the largest, its least on top.
    if (static_cast<int>(summary.highest.size()) < highest) {
      summary.highest.emplace_back(v, pixel);
      std::push_heap(summary.highest.begin(), summary.highest.end(), later);
    } else if (later({v, pixel}, summary.highest.front())) {
      std::pop_heap(summary.highest.begin(), summary.highest.end(), later);
      summary.highest.back() = {v, pixel};
      std::push_heap(summary.highest.begin(), summary.highest.end(), later);
    }
  });
  std::sort_heap(summary.highest.begin(), summary.highest.end(), later);
  summary.histogram.assign(static_cast<size_t>(bins), 0);
  if (summary.valid == 0) {
    summary.low = summary.high = 0;
    return summary;
  }
  if (!(summary.high > summary.low)) summary.high = summary.low + 1;
  const double scale = bins / (summary.high - summary.low);
  forEachScore(band, [&](int64_t, double v) {
    const auto bin = static_cast<int>((v - summary.low) * scale);
    ++summary.histogram[std::clamp(bin, 0, bins - 1)];
  });
  return summary;
}

QString detectorTitle(DetectMethod method) {
  switch (method) {
    case DetectMethod::Rx:
      return QObject::tr("Anomaly detection (RX)");
    case DetectMethod::MatchedFilter:
      return QObject::tr("Matched filter");
    case DetectMethod::Ace:
      return QObject::tr("Adaptive cosine estimator (ACE)");
    case DetectMethod::Cem:
      return QObject::tr("Constrained energy minimisation (CEM)");
  }
  return {};
}

QString detectionReport(const DetectionPage& page, GDALDataset& scores) {
  QString html = html::pageStart("Hyperstream " + page.heading);
  html += "<h1>" + page.heading.toHtmlEscaped() + "</h1><table>";
  html += html::row(QObject::tr("Input"), QString::fromStdString(page.input.path));
  html += html::row(QObject::tr("Size"), QObject::tr("%1 x %2 pixels, %3 bands used of %4")
                                             .arg(page.input.width)
                                             .arg(page.input.height)
                                             .arg(page.bands.size())
                                             .arg(page.input.bandCount));
  html += html::row(QObject::tr("Valid pixels"), QString::number(page.validPixels));
  for (const auto& [name, value] : page.facts) html += html::row(name, value);
  html += "</table>";
  const int bands = std::min(scores.GetRasterCount(), kBandsShown);
  for (int b = 1; b <= bands; ++b) {
    GDALRasterBand& band = *scores.GetRasterBand(b);
    const QString name = QString::fromUtf8(band.GetDescription());
    const ScoreSummary summary = summariseScores(band);
    html += "<h2>" + name.toHtmlEscaped() + "</h2>";
    if (summary.valid == 0) {
      html += QObject::tr("<p>No pixel was scored.</p>");
      continue;
    }
    const QuickLook look = makeQuickLook(scores, {b});
    if (!look.dataUrl.isEmpty())
      html += QObject::tr(
                  "<p>The scores, grey between their 2nd and 98th percentiles (nodata "
                  "transparent):</p>") +
              look.img(name);
    html += histogramPlot(summary, name);
    html += QObject::tr("<p>The highest scores (rows and columns from 0 at the top left):</p>") +
            highestTable(summary, page.input.width);
  }
  if (scores.GetRasterCount() > kBandsShown)
    html += QObject::tr("<p>%1 more score bands are in the output.</p>")
                .arg(scores.GetRasterCount() - kBandsShown);
  if (!page.targets.empty()) html += QObject::tr("<h2>Targets</h2>") + targetsPlot(page);
  html += html::pageEnd();
  return html;
}

void writeDetectionReport(const DetectionPage& page, GDALDataset& scores, const std::string& path) {
  scores.FlushCache();
  saveFileAtomically(path, detectionReport(page, scores).toUtf8(), "OUTPUT_HTML_FILE");
}

}  // namespace hyperstream
