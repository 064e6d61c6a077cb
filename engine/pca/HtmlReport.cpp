#include "pca/HtmlReport.h"

#include "io/HtmlPage.h"
#include "io/SvgPlot.h"
#include "pca/Report.h"

#include <algorithm>
#include <cmath>

namespace hyperstream {

namespace {

using svg::kHeight;
using svg::kWidth;
using svg::kX0;
using svg::kX1;
using svg::kY0;
using svg::kY1;
using svg::number;
using svg::scale;

// What the report calls things: PCA's components and variance, or MNF's components and SNR.
struct Wording {
  QString title, heading, prefix, quantity;
  QString component(int k) const { return prefix + QString::number(k + 1); }  // "PC1"
};

Wording wordingFor(const PcaModel& model) {
  if (model.transform == Transform::Mnf)
    return {"Hyperstream MNF", QObject::tr("Minimum noise fraction"), "MNF",
            QObject::tr("summed SNR")};
  return {"Hyperstream PCA", QObject::tr("Principal component analysis"), "PC",
          QObject::tr("variance")};
}

QString screePlot(const PcaModel& model) {
  const Wording words = wordingFor(model);
  const int shown = std::min(model.componentCount(), 30);
  const double top = model.explainedPercent(0);
  const int x0 = kX0, x1 = kX1, y0 = kY0, y1 = kY1;
  const double slot = static_cast<double>(x1 - x0) / shown;
  QString svg = svg::open(QObject::tr("Scree plot"));
  svg += svg::axes(QObject::tr("component"), QObject::tr("explained %1 (%)").arg(words.quantity), 1,
                   shown, 0, top, QObject::tr("cumulative (%), 0-100"));
  QString line;
  for (int k = 0; k < shown; ++k) {
    const double height = scale(model.explainedPercent(k), 0, top, 0, y0 - y1);
    svg += QString(
               "<rect x='%1' y='%2' width='%3' height='%4' fill='%5'><title>%6: %7 %"
               "</title></rect>")
               .arg(x0 + k * slot + slot * 0.15)
               .arg(y0 - height)
               .arg(slot * 0.7)
               .arg(height)
               .arg(svg::colour(0))
               .arg(words.component(k))
               .arg(number(model.explainedPercent(k)));
    line += QString("%1,%2 ")
                .arg(x0 + (k + 0.5) * slot)
                .arg(scale(model.cumulativePercent(k), 0, 100, y0, y1));
  }
  svg += QString("<polyline points='%1' fill='none' stroke='%2' stroke-width='2'/>")
             .arg(line, svg::colour(1));
  return svg + "</svg>";
}

QString loadingsPlot(const PcaResult& result) {
  const PcaModel& model = result.model;
  const int components = std::min({3, result.components, model.componentCount()});
  std::vector<double> x;
  bool haveWavelengths = !result.bands.empty();
  for (int b : result.bands) haveWavelengths &= !std::isnan(result.input.wavelengths[b - 1]);
  for (int b : result.bands)
    x.push_back(haveWavelengths ? result.input.wavelengths[b - 1] : static_cast<double>(b));
  const double xLo = *std::min_element(x.begin(), x.end());
  const double xHi = *std::max_element(x.begin(), x.end());
  double yLo = 0, yHi = 0;
  const int all = model.componentCount();
  for (int b = 0; b < model.bands; ++b)
    for (int k = 0; k < components; ++k) {
      yLo = std::min(yLo, model.eigenvectors[static_cast<size_t>(b) * all + k]);
      yHi = std::max(yHi, model.eigenvectors[static_cast<size_t>(b) * all + k]);
    }
  const QString xLabel = haveWavelengths
                             ? QObject::tr("wavelength (%1)")
                                   .arg(QString::fromStdString(result.input.wavelengthUnits.empty()
                                                                   ? std::string("?")
                                                                   : result.input.wavelengthUnits))
                             : QObject::tr("band");
  QString svg = svg::open(QObject::tr("Loadings"));
  svg += svg::axes(xLabel, QObject::tr("loading"), xLo, xHi, yLo, yHi);
  for (int k = 0; k < components; ++k) {
    std::vector<double> y(model.bands);
    for (int b = 0; b < model.bands; ++b)
      y[b] = model.eigenvectors[static_cast<size_t>(b) * all + k];
    svg += svg::polyline(x, y, xLo, xHi, yLo, yHi, svg::colour(k));
    svg += QString("<text x='%1' y='%2' font-size='12' fill='%3'>%4</text>")
               .arg(kX1 + 6)
               .arg(kY1 + 14 * (k + 1))
               .arg(svg::colour(k))
               .arg(wordingFor(model).component(k));
  }
  return svg + "</svg>";
}

// One row per component: eigenvalue (and SNR for MNF), explained and cumulative share.
QString eigenvalueTable(const PcaResult& result) {
  const PcaModel& model = result.model;
  const bool mnf = model.transform == Transform::Mnf;
  QString html =
      QObject::tr("<h2>Eigenvalues</h2><table><tr><th>component</th><th>eigenvalue</th>");
  if (mnf) html += QObject::tr("<th>SNR</th>");
  html += QObject::tr("<th>explained %</th><th>cumulative %</th><th>in output</th></tr>");
  for (int k = 0; k < model.componentCount(); ++k) {
    html += QString("<tr><td>%1</td><td>%2</td>")
                .arg(wordingFor(model).component(k))
                .arg(number(model.eigenvalues[k], 10));
    if (mnf) html += QString("<td>%1</td>").arg(number(model.signal(k), 8));
    html += QString("<td>%1</td><td>%2</td><td>%3</td></tr>")
                .arg(number(model.explainedPercent(k), 6))
                .arg(number(model.cumulativePercent(k), 8))
                .arg(k < result.components ? QObject::tr("yes") : QString());
  }
  return html + "</table>";
}

// MNF: each band's standard deviation beside its noise estimate's.
QString noiseTable(const PcaResult& result) {
  const PcaModel& model = result.model;
  QString html = QObject::tr(
      "<h2>Noise</h2><table><tr><th>band</th><th>description</th><th>std. dev.</th>"
      "<th>noise std. dev.</th></tr>");
  for (int b = 0; b < model.bands; ++b)
    html += QString("<tr><td>%1</td><td>%2</td><td>%3</td><td>%4</td></tr>")
                .arg(result.bands[b])
                .arg(QString::fromStdString(result.input.bandDescriptions[result.bands[b] - 1])
                         .toHtmlEscaped())
                .arg(number(model.stddev[b], 6))
                .arg(number(model.noiseStddev[b], 6));
  return html + "</table>";
}

}  // namespace

QString htmlReport(const PcaResult& result, const PcaOptions& options) {
  const PcaModel& model = result.model;
  const Wording words = wordingFor(model);
  QString page = html::pageStart(words.title);
  const bool rebuilt = options.kind != PcaJobKind::Transform;
  page +=
      "<h1>" +
      (rebuilt ? QObject::tr("Denoised with the %1").arg(words.heading.toLower()) : words.heading) +
      "</h1>";
  page += "<table>";
  auto row = [&](const QString& name, const QString& value) { page += html::row(name, value); };
  row(QObject::tr("Input"), QString::fromStdString(options.input));
  row(QObject::tr("Output"), QString::fromStdString(options.output));
  row(QObject::tr("Size"), QString("%1 x %2 pixels, %3 bands used of %4")
                               .arg(result.input.width)
                               .arg(result.input.height)
                               .arg(result.bands.size())
                               .arg(result.input.bandCount));
  row(QObject::tr("Valid pixels"),
      QString("%1 of %2").arg(model.validPixels).arg(result.totalPixels));
  QStringList constant;
  for (int b : model.constantBands) constant << QString::number(result.bands[b]);
  row(QObject::tr("Constant bands (left out)"),
      constant.isEmpty() ? QObject::tr("none") : constant.join(", "));
  if (options.noise)
    row(QObject::tr("Noise"), QObject::tr("differences with the neighbour: %1")
                                  .arg(QString::fromStdString(noiseDirectionName(*options.noise))));
  else
    row(QObject::tr("Matrix"), QString::fromStdString(matrixTypeName(model.matrix)));
  row(rebuilt ? QObject::tr("Image rebuilt from") : QObject::tr("Components written"),
      QString(rebuilt ? "%1 components (%2 % of the %4), written as %3" : "%1 (%2 % of the %4), %3")
          .arg(result.components)
          .arg(number(model.cumulativePercent(result.components - 1), 6))
          .arg(QString::fromStdString(outputTypeName(result.outputType)))
          .arg(words.quantity));
  row(QObject::tr("Device"), QString::fromStdString(result.backend));
  row(QObject::tr("Seconds"),
      QString("read %1, moments %2, eigen %3, projection %4, write %5, total %6")
          .arg(number(result.seconds.read, 3), number(result.seconds.moments, 3),
               number(result.seconds.eigen, 3), number(result.seconds.projection, 3),
               number(result.seconds.write, 3), number(result.seconds.total, 3)));
  page += "</table>";
  page += QObject::tr(
              "<h2>Scree plot</h2><p>Explained %1 per component (bars) and "
              "cumulative (line).</p>")
              .arg(words.quantity) +
          screePlot(model);
  page += QObject::tr("<h2>Loadings</h2>") + loadingsPlot(result);
  page += eigenvalueTable(result);
  if (model.transform == Transform::Mnf) page += noiseTable(result);
  page += "</table>" + html::pageEnd();
  return page;
}

void writeHtmlReport(const PcaResult& result, const PcaOptions& options, const std::string& path) {
  saveFileAtomically(path, htmlReport(result, options).toUtf8(), "OUTPUT_HTML_FILE");
}

}  // namespace hyperstream
