#include "detect/SamReport.h"

#include "io/HtmlPage.h"
#include "io/SvgPlot.h"
#include "io/TextFile.h"

#include <QObject>

#include <algorithm>
#include <cmath>
#include <vector>

namespace hyperstream {

namespace {

QString hexColour(int k) {
  const GDALColorEntry c = classColour(k);
  return QString("#%1%2%3")
      .arg(c.c1, 2, 16, QChar('0'))
      .arg(c.c2, 2, 16, QChar('0'))
      .arg(c.c3, 2, 16, QChar('0'));
}

QString swatch(const QString& colour) {
  return QString(
             "<span style='display:inline-block;width:12px;height:12px;background:%1;"
             "border:1px solid #555;vertical-align:middle'></span> ")
      .arg(colour);
}

QString classTable(const SamResult& result) {
  QString table = QObject::tr(
      "<table><tr><th>class</th><th>spectrum</th><th>pixels</th><th>share of the valid "
      "pixels</th><th>mean angle (rad)</th></tr>");
  const double valid = std::max<double>(1, static_cast<double>(result.validPixels));
  for (size_t k = 0; k < result.classCounts.size(); ++k) {
    const int64_t count = result.classCounts[k];
    const QString name =
        k == 0 ? QObject::tr("unclassified") : QString::fromStdString(result.library[k - 1].name);
    const QString colour = k == 0 ? QString() : swatch(hexColour(static_cast<int>(k - 1)));
    table += QString("<tr><td>%1</td><td>%2%3</td><td>%4</td><td>%5 %</td><td>%6</td></tr>")
                 .arg(k)
                 .arg(colour, name.toHtmlEscaped())
                 .arg(count)
                 .arg(svg::number(100.0 * static_cast<double>(count) / valid, 3))
                 .arg(count > 0 ? svg::number(result.classAngleSums[k] / count, 3) : "-");
  }
  return table + "</table>";
}

// The best angles' histogram up to the last bin with pixels (the last bin: all beyond 1 rad).
QString angleHistogram(const SamResult& result, double maxAngle) {
  int last = 0;
  int64_t largest = 1;
  for (int b = 0; b < kAngleBins; ++b)
    if (result.angleHistogram[b] > 0) {
      last = b;
      largest = std::max(largest, result.angleHistogram[b]);
    }
  std::vector<double> x, y;
  for (int b = 0; b <= last; ++b) {
    x.push_back((b + 0.5) * kAngleBin);
    y.push_back(static_cast<double>(result.angleHistogram[b]));
  }
  svg::Plot plot(
      QObject::tr("Each valid pixel's angle to its nearest spectrum"),
      {QObject::tr("angle (rad)"), 0, (last + 1) * kAngleBin},
      {QObject::tr("pixels per %1 rad").arg(kAngleBin), 0, static_cast<double>(largest)});
  plot.line(x, y, "#1f78b4", true);
  if (maxAngle < kAnyAngle && maxAngle <= (last + 1) * kAngleBin)
    plot.marker(maxAngle, QObject::tr("largest angle classified"));
  return plot.svg();
}

// The library's spectra on the selected bands, each scaled to length 1 (the angle sees only
// their directions), in their classes' colours.
QString spectraPlot(const SamResult& result) {
  const svg::BandAxis axis(result.bands, result.input.wavelengths, result.input.wavelengthUnits);
  std::vector<std::vector<double>> units;
  double hi = 0;
  for (const Target& spectrum : result.library) {
    double norm = 0;
    for (const double v : spectrum.spectrum) norm += v * v;
    std::vector<double> unit = spectrum.spectrum;
    for (double& v : unit) {
      v /= std::sqrt(norm);
      hi = std::max(hi, v);
    }
    units.push_back(unit);
  }
  svg::Plot plot(QObject::tr("Library spectra on the image's bands (length 1)"), axis.axis(),
                 {QObject::tr("value / length"), 0, hi});
  for (size_t k = 0; k < units.size(); ++k)
    plot.line(axis.x(), axis.values(units[k]), hexColour(static_cast<int>(k)));
  return plot.svg();
}

}  // namespace

QString samReport(const SamResult& result, const SamOptions& options, const QuickLook& classMap) {
  QString page = html::pageStart("Hyperstream spectral angle mapper");
  page += QObject::tr("<h1>Spectral angle mapper</h1><table>");
  auto row = [&](const QString& name, const QString& value) { page += html::row(name, value); };
  row(QObject::tr("Input"), QString::fromStdString(options.input));
  row(QObject::tr("Library"), QObject::tr("%1 (%2, %3 spectra)")
                                  .arg(QString::fromStdString(options.library.library),
                                       QString::fromStdString(result.libraryFormat))
                                  .arg(result.library.size()));
  row(QObject::tr("Classes"), QString::fromStdString(options.output));
  row(QObject::tr("Size"), QObject::tr("%1 x %2 pixels, %3 bands used of %4")
                               .arg(result.input.width)
                               .arg(result.input.height)
                               .arg(result.bands.size())
                               .arg(result.input.bandCount));
  row(QObject::tr("Valid pixels"), QString::number(result.validPixels));
  row(QObject::tr("Largest angle classified"),
      options.maxAngle < kAnyAngle ? QObject::tr("%1 rad").arg(svg::number(options.maxAngle, 4))
                                   : QObject::tr("any"));
  row(QObject::tr("Device"), QString::fromStdString(result.backend));
  row(QObject::tr("Seconds"), svg::number(result.seconds, 3));
  page += "</table>";
  page += QObject::tr("<h2>Classes</h2>") + classTable(result);
  if (!classMap.dataUrl.isEmpty())
    page += QObject::tr("<p>The class map (unclassified and invalid pixels transparent):</p>") +
            classMap.img(QObject::tr("class map"));
  page += QObject::tr("<h2>Angles</h2>") + angleHistogram(result, options.maxAngle);
  page += QObject::tr("<h2>Library</h2>") + spectraPlot(result);
  page += html::pageEnd();
  return page;
}

void writeSamReport(const SamResult& result, const SamOptions& options, GDALDataset& classes) {
  classes.FlushCache();
  saveFileAtomically(options.htmlReport,
                     samReport(result, options, makeClassQuickLook(classes, 320)).toUtf8(),
                     "OUTPUT_HTML_FILE");
}

}  // namespace hyperstream
