#include "unmixing/AbundanceReport.h"

#include "io/HtmlPage.h"
#include "io/SvgPlot.h"
#include "io/TextFile.h"
#include "unmixing/EndmemberReport.h"

#include <QObject>

#include <algorithm>

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

}  // namespace

QString abundanceReport(const AbundanceResult& result, const AbundanceOptions& options,
                        const std::vector<QuickLook>& maps) {
  QString page = html::pageStart("Hyperstream abundances");
  page += QObject::tr("<h1>Abundances</h1><table>");
  auto row = [&](const QString& name, const QString& value) { page += html::row(name, value); };
  row(QObject::tr("Input"), QString::fromStdString(options.input));
  row(QObject::tr("Endmembers"), QString::fromStdString(options.endmembers));
  row(QObject::tr("Output"), QString::fromStdString(options.output));
  if (!options.rmseOutput.empty())
    row(QObject::tr("RMSE"), QString::fromStdString(options.rmseOutput));
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
  if (rmse) {
    rmse->FlushCache();
    maps.push_back(makeQuickLook(*rmse, {1}, 200));
  }
  saveFileAtomically(options.htmlReport, abundanceReport(result, options, maps).toUtf8(),
                     "OUTPUT_HTML_FILE");
}

}  // namespace hyperstream
