#include "unmixing/EndmemberReport.h"

#include "io/HtmlPage.h"
#include "io/SvgPlot.h"
#include "io/TextFile.h"

#include <QObject>

#include <algorithm>
#include <cmath>

namespace hyperstream {

namespace {

QString methodText(const EndmemberResult& result, const EndmemberOptions& options) {
  const EndmemberSearch& search = result.search;
  switch (options.search.method) {
    case EndmemberMethod::Atgp:
      return QObject::tr("ATGP (Ren & Chang 2003)");
    case EndmemberMethod::Vca:
      return QObject::tr("VCA (Nascimento & Bioucas-Dias 2005), seed %1; %2")
          .arg(options.search.seed)
          .arg(QString::fromStdString(vcaChoiceText(search)));
    case EndmemberMethod::Nfindr:
      return QObject::tr(
                 "N-FINDR (Winter 1999) from ATGP: %1 replacement(s), the volume %2 times "
                 "ATGP's%3")
          .arg(search.replacements)
          .arg(svg::number(search.volumeGrowth))
          .arg(search.converged ? QString() : QObject::tr(" (stopped before converging)"));
  }
  return {};
}

// The preview with a numbered circle on each endmember's pixel.
QString markedImage(const EndmemberResult& result, const QuickLook& image) {
  const int w = image.width * image.zoom(), h = image.height * image.zoom();
  const double sx = static_cast<double>(w) / static_cast<double>(result.input.width);
  const double sy = static_cast<double>(h) / static_cast<double>(result.input.height);
  QString svg = QString(
                    "<svg xmlns='http://www.w3.org/2000/svg' width='%1' height='%2'>"
                    "<image href='%3' width='%1' height='%2' style='image-rendering:pixelated'/>")
                    .arg(w)
                    .arg(h)
                    .arg(image.dataUrl);
  const auto& endmembers = result.table.endmembers;
  for (size_t k = 0; k < endmembers.size(); ++k) {
    const double x = (static_cast<double>(endmembers[k].col) + 0.5) * sx;
    const double y = (static_cast<double>(endmembers[k].row) + 0.5) * sy;
    svg += QString(
               "<circle cx='%1' cy='%2' r='7' fill='none' stroke='white' stroke-width='4'/>"
               "<circle cx='%1' cy='%2' r='7' fill='none' stroke='%3' stroke-width='2'/>"
               "<text x='%4' y='%5' font-size='12' font-weight='bold' fill='%3' "
               "stroke='white' stroke-width='3' paint-order='stroke'>%6</text>")
               .arg(x, 0, 'f', 1)
               .arg(y, 0, 'f', 1)
               .arg(svg::colour(static_cast<int>(k)))
               .arg(x + 9, 0, 'f', 1)
               .arg(y + 4, 0, 'f', 1)
               .arg(k + 1);
  }
  return svg + "</svg>";
}

QString endmemberTable(const EndmemberResult& result) {
  QString html = QObject::tr(
      "<h2>Endmembers</h2><table><tr><th>#</th><th>id</th><th>row</th>"
      "<th>column</th><th>x</th><th>y</th><th>pixels averaged</th></tr>");
  const std::array<double, 6>& g = result.input.geoTransform;
  for (size_t k = 0; k < result.table.endmembers.size(); ++k) {
    const Endmember& e = result.table.endmembers[k];
    const double x = e.col + 0.5, y = e.row + 0.5;
    html += QString(
                "<tr><td style='color:%1'>%2</td><td>%3</td><td>%4</td><td>%5</td><td>%6</td>"
                "<td>%7</td><td>%8</td></tr>")
                .arg(svg::colour(static_cast<int>(k)))
                .arg(k + 1)
                .arg(QString::fromStdString(e.id).toHtmlEscaped())
                .arg(e.row)
                .arg(e.col)
                .arg(result.input.hasGeoTransform ? svg::number(g[0] + x * g[1] + y * g[2], 10)
                                                  : QString("-"))
                .arg(result.input.hasGeoTransform ? svg::number(g[3] + x * g[4] + y * g[5], 10)
                                                  : QString("-"))
                .arg(e.pixelsAveraged);
  }
  return html + "</table>";
}

}  // namespace

QString materialCountSection(const MaterialCount& count, const SignalSubspace& subspace) {
  QString html = QObject::tr("<h2>How many endmembers</h2><p>%1: %2.</p>")
                     .arg(count.count)
                     .arg(QString::fromStdString(count.reason()).toHtmlEscaped());
  if (count.counts.empty()) return html;
  const double most = *std::max_element(count.meanRmse.begin(), count.meanRmse.end());
  svg::Plot plot(
      QObject::tr("Mean RMSE by endmember count (N-FINDR, then FCLS over %1 sampled "
                  "pixels)")
          .arg(count.samplePixels),
      {QObject::tr("endmembers"), static_cast<double>(count.counts.front()),
       static_cast<double>(std::max(count.counts.back(), count.count)), svg::Axis::Scale::Integer},
      {QObject::tr("mean RMSE (the input's units)"), 0, most});
  const std::vector<double> x(count.counts.begin(), count.counts.end());
  plot.line(x, count.meanRmse, svg::colour(0), true);
  plot.marker(count.count, QObject::tr("counted: %1").arg(count.count));
  html += plot.svg();
  return html + QObject::tr(
                    "<p>The curve falls steeply while each new endmember is one of the scene's "
                    "materials and flattens after; the count is where one more stops paying. "
                    "The signal subspace (HySime) has %1 dimensions; the virtual dimensionality "
                    "(Harsanyi-Farrand-Chang) is %2 / %3 / %4 at false-alarm rates 1e-3 / 1e-4 "
                    "/ 1e-5. Give COUNT (--count) to take another.</p>")
                    .arg(subspace.dimension)
                    .arg(subspace.virtualDimensionality[0])
                    .arg(subspace.virtualDimensionality[1])
                    .arg(subspace.virtualDimensionality[2]);
}

QString endmemberSpectraPlot(const std::vector<Endmember>& endmembers,
                             const std::vector<int>& bands, const RasterInfo& input) {
  double yLo = 0, yHi = 0;
  for (const Endmember& e : endmembers)
    for (const double v : e.spectrum) {
      yLo = std::min(yLo, v);
      yHi = std::max(yHi, v);
    }
  const svg::BandAxis axis(bands, input.wavelengths, input.wavelengthUnits);
  svg::Plot plot(QObject::tr("Endmember spectra"), axis.axis(),
                 {QObject::tr("value (the input's units)"), yLo, yHi});
  plot.zeroLine();
  // A band where every endmember has the same value is dead (a sensor's constant band): the
  // lines break there instead of dropping to its value.
  std::vector<bool> dead(bands.size(), endmembers.size() > 1);
  for (size_t b = 0; b < bands.size(); ++b)
    for (const Endmember& e : endmembers)
      if (b < e.spectrum.size() && e.spectrum[b] != endmembers.front().spectrum[b]) dead[b] = false;
  QStringList names;
  for (size_t k = 0; k < endmembers.size(); ++k) {
    std::vector<double> spectrum = endmembers[k].spectrum;
    for (size_t b = 0; b < spectrum.size() && b < dead.size(); ++b)
      if (dead[b]) spectrum[b] = NAN;
    plot.line(axis.x(), axis.values(spectrum), svg::colour(static_cast<int>(k)));
    names << QString::fromStdString(endmembers[k].id);
  }
  plot.legend(names);
  return plot.svg();
}

QString endmemberReport(const EndmemberResult& result, const EndmemberOptions& options,
                        const QuickLook& image) {
  QString page = html::pageStart("Hyperstream endmembers");
  page += QObject::tr("<h1>Endmember extraction</h1><table>");
  auto row = [&](const QString& name, const QString& value) { page += html::row(name, value); };
  row(QObject::tr("Input"), QString::fromStdString(options.input));
  if (!options.locations.empty())
    row(QObject::tr("Searched in"), QString::fromStdString(options.locations));
  row(QObject::tr("Output"), QString::fromStdString(options.output));
  row(QObject::tr("Size"), QObject::tr("%1 x %2 pixels, %3 bands used of %4")
                               .arg(result.input.width)
                               .arg(result.input.height)
                               .arg(result.bands.size())
                               .arg(result.input.bandCount));
  row(QObject::tr("Valid pixels"), QString::number(result.search.validPixels));
  row(QObject::tr("Method"), methodText(result, options));
  row(QObject::tr("Spectra"),
      options.averageWindow > 1
          ? QObject::tr("the mean of the most homogeneous %1 x %1 window holding each pixel")
                .arg(options.averageWindow)
          : QObject::tr("each pixel's own"));
  row(QObject::tr("Passes over the image"), QString::number(result.search.passes));
  row(QObject::tr("Device"), QString::fromStdString(result.backend));
  row(QObject::tr("Seconds"), svg::number(result.seconds, 3));
  page += "</table>";
  if (result.search.materials)
    page += materialCountSection(*result.search.materials, *result.search.subspace);
  page += QObject::tr("<h2>Spectra</h2>") +
          endmemberSpectraPlot(result.table.endmembers, result.bands, result.input);
  if (!image.dataUrl.isEmpty()) {
    const std::vector<int> rgb = naturalColourBands(result.bands, result.input.wavelengths);
    page += QObject::tr(
                "<h2>Where they are</h2><p>The input's bands %1, %2 and %3 as red, green "
                "and blue (each stretched between its 2nd and 98th percentiles), the "
                "endmembers circled.</p>")
                .arg(rgb[0])
                .arg(rgb[1])
                .arg(rgb[2]) +
            markedImage(result, image);
  }
  page += endmemberTable(result);
  page += html::pageEnd();
  return page;
}

void writeEndmemberReport(const EndmemberResult& result, const EndmemberOptions& options,
                          const std::string& path) {
  DatasetPtr input = openRaster(options.input, "INPUT");
  const QuickLook image =
      makeQuickLook(*input, naturalColourBands(result.bands, result.input.wavelengths));
  saveFileAtomically(path, endmemberReport(result, options, image).toUtf8(), "OUTPUT_HTML_FILE");
}

}  // namespace hyperstream
