#include "unmixing/AbundanceReport.h"

#include "io/HtmlPage.h"
#include "io/SvgPlot.h"
#include "io/TextFile.h"
#include "unmixing/EndmemberReport.h"

#include <QObject>

#include <algorithm>
#include <cmath>
#include <vector>

namespace hyperstream {

namespace {

QString methodText(AbundanceMethod method) {
  switch (method) {
    case AbundanceMethod::Fcls:
      return QObject::tr("FCLS: non-negative, summing to one (Heinz & Chang 2001)");
    case AbundanceMethod::Nnls:
      return QObject::tr("NNLS: non-negative");
    case AbundanceMethod::Ucls:
      return QObject::tr("UCLS: unconstrained least squares");
  }
  return {};
}

QString figure(const QuickLook& map, const QString& caption, const QString& colour) {
  return QString(
             "<figure style='display:inline-block;margin:0 12px 12px 0'>%1"
             "<figcaption style='color:%2'>%3</figcaption></figure>")
      .arg(map.img(caption), colour, caption.toHtmlEscaped());
}

// The maps' scale: black 0 to white 1, as a bar.
QString colourBar() {
  return QString(
      "<svg xmlns='http://www.w3.org/2000/svg' width='260' height='34'>"
      "<defs><linearGradient id='scale'><stop offset='0' stop-color='#000'/>"
      "<stop offset='1' stop-color='#fff'/></linearGradient></defs>"
      "<rect x='10' y='2' width='240' height='14' fill='url(#scale)' stroke='#555'/>"
      "<text x='10' y='30' font-size='11' text-anchor='middle'>0</text>"
      "<text x='130' y='30' font-size='11' text-anchor='middle'>0.5</text>"
      "<text x='250' y='30' font-size='11' text-anchor='middle'>1</text></svg>");
}

// Read row by row (GDAL's ComputeStatistics would store them in the output, or beside it).
RmseSummary summarise(GDALRasterBand& band) {
  int hasNodata = 0;
  const double nodata = band.GetNoDataValue(&hasNodata);
  std::vector<double> row(static_cast<size_t>(band.GetXSize()));
  double sum = 0;
  int64_t count = 0;
  RmseSummary summary;
  for (int y = 0; y < band.GetYSize(); ++y) {
    if (band.RasterIO(GF_Read, 0, y, band.GetXSize(), 1, row.data(), band.GetXSize(), 1,
                      GDT_Float64, 0, 0, nullptr) != CE_None)
      return {};
    for (const double value : row)
      if (std::isfinite(value) && !(hasNodata && value == nodata)) {
        sum += value;
        summary.maximum = std::max(summary.maximum, value);
        ++count;
      }
  }
  summary.mean = count > 0 ? sum / static_cast<double>(count) : 0;
  return summary;
}

}  // namespace

QString abundanceReport(const AbundanceResult& result, const AbundanceOptions& options,
                        const std::vector<QuickLook>& maps,
                        const std::optional<RmseSummary>& rmse) {
  QString page = html::pageStart("Hyperstream abundances");
  page += QObject::tr("<h1>Abundances</h1><table>");
  auto row = [&](const QString& name, const QString& value) { page += html::row(name, value); };
  row(QObject::tr("Input"), QString::fromStdString(options.input));
  row(QObject::tr("Endmembers"), QString::fromStdString(options.endmembers));
  row(QObject::tr("Output"), QString::fromStdString(options.output));
  if (!options.rmseOutput.empty())
    row(QObject::tr("RMSE"), QString::fromStdString(options.rmseOutput));
  if (rmse)
    row(QObject::tr("Reconstruction error (RMSE)"),
        QObject::tr("mean %1, largest %2 (the input's units)")
            .arg(svg::number(rmse->mean, 4), svg::number(rmse->maximum, 4)));
  row(QObject::tr("Size"), QObject::tr("%1 x %2 pixels, %3 bands used of %4")
                               .arg(result.input.width)
                               .arg(result.input.height)
                               .arg(result.bands.size())
                               .arg(result.input.bandCount));
  row(QObject::tr("Valid pixels"), QString::number(result.validPixels));
  row(QObject::tr("Method"), methodText(options.method));
  row(QObject::tr("Condition number of the endmembers' Gram matrix"),
      svg::number(result.conditionNumber, 3));
  row(QObject::tr("Device"), QString::fromStdString(result.backend));
  row(QObject::tr("Seconds"), svg::number(result.seconds, 3));
  page += "</table>";
  const auto& endmembers = result.endmembers.endmembers;
  const bool bounded = options.method != AbundanceMethod::Ucls;
  page += QObject::tr(
              "<h2>Maps</h2><p>Each endmember's abundance, %1; invalid pixels "
              "transparent.</p>")
              .arg(bounded ? QObject::tr("black 0 to white 1")
                           : QObject::tr("stretched between its 2nd and 98th percentiles"));
  if (bounded) page += colourBar() + "<br>";
  for (size_t k = 0; k < endmembers.size() && k < maps.size(); ++k)
    page +=
        figure(maps[k], QString::fromStdString(endmembers[k].id), svg::colour(static_cast<int>(k)));
  if (maps.size() > endmembers.size())
    page += figure(maps.back(), QObject::tr("RMSE (2nd-98th percentile)"), "#000");
  page += QObject::tr("<h2>Endmember spectra</h2>") +
          endmemberSpectraPlot(result.endmembers.endmembers, result.bands, result.input);
  page += html::pageEnd();
  return page;
}

void writeAbundanceReport(const AbundanceResult& result, const AbundanceOptions& options,
                          GDALDataset& abundances, GDALDataset* rmse) {
  abundances.FlushCache();
  const bool bounded = options.method != AbundanceMethod::Ucls;
  std::vector<QuickLook> maps;
  for (int band = 1; band <= abundances.GetRasterCount(); ++band)
    maps.push_back(makeQuickLook(abundances, {band}, 200,
                                 bounded ? std::optional(std::pair(0.0, 1.0)) : std::nullopt));
  std::optional<RmseSummary> summary;
  if (rmse) {
    rmse->FlushCache();
    maps.push_back(makeQuickLook(*rmse, {1}, 200));
    summary = summarise(*rmse->GetRasterBand(1));
  }
  saveFileAtomically(options.htmlReport, abundanceReport(result, options, maps, summary).toUtf8(),
                     "OUTPUT_HTML_FILE");
}

}  // namespace hyperstream
