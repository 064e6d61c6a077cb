#include "pca/HtmlReport.h"

#include "covariance/FitStatistics.h"
#include "io/HtmlPage.h"
#include "io/SvgPlot.h"

#include <algorithm>
#include <cmath>

namespace hyperstream {

namespace {

using svg::number;

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

// How many components the scree plot and the eigenvalue table show: where the signal is (three
// times what was written or estimated, at least 30), not the ~200 of noise after it.
int componentsShown(const CovarianceResult& result) {
  const int signal = std::max(result.components, result.subspace ? result.subspace->dimension : 0);
  return std::min(result.model.componentCount(), std::max(30, 3 * signal));
}

// Eigenvalues on a log scale (hyperspectral spectra fall over decades), the cumulative share on
// the right axis, markers where the written (or kept) components and the signal subspace end.
QString screePlot(const CovarianceResult& result, bool rebuilt) {
  const PcaModel& model = result.model;
  const Wording words = wordingFor(model);
  const int shown = componentsShown(result);
  std::vector<double> k(shown), eigenvalue(shown, NAN), cumulative(shown);
  double top = 0;
  for (int i = 0; i < shown; ++i) top = std::max(top, model.eigenvalues[i]);
  double bottom = top;
  for (int i = 0; i < shown; ++i) {
    k[i] = i + 1;
    cumulative[i] = model.cumulativePercent(i);
    // What round-off leaves of a zero eigenvalue is left out of a log plot.
    if (model.eigenvalues[i] > top * 1e-12) {
      eigenvalue[i] = model.eigenvalues[i];
      bottom = std::min(bottom, eigenvalue[i]);
    }
  }
  const QString yLabel = model.transform == Transform::Mnf
                             ? QObject::tr("eigenvalue (1 + SNR), log scale")
                             : QObject::tr("eigenvalue (variance), log scale");
  svg::Plot plot(
      QObject::tr("Scree plot"),
      {QObject::tr("component"), 1, static_cast<double>(shown), svg::Axis::Scale::Integer},
      {yLabel, bottom, top > 0 ? top : 1, svg::Axis::Scale::Log});
  plot.setRightAxis({QObject::tr("cumulative %1 (%)").arg(words.quantity), 0, 100}, svg::colour(1));
  plot.line(k, eigenvalue, svg::colour(0), shown <= 60);
  plot.line(k, cumulative, svg::colour(1), false, true);
  if (result.components < shown)
    plot.marker(
        result.components + 0.5,
        (rebuilt ? QObject::tr("%1 kept") : QObject::tr("%1 written")).arg(result.components));
  if (result.subspace && result.subspace->dimension != result.components &&
      result.subspace->dimension < shown)
    plot.marker(result.subspace->dimension + 0.5,
                QObject::tr("signal subspace (HySime): %1").arg(result.subspace->dimension));
  return plot.svg();
}

// The first three components' loadings against wavelength (or band), broken where bands were
// left out (not selected, or constant).
QString loadingsPlot(const CovarianceResult& result) {
  const PcaModel& model = result.model;
  const int components = std::min({3, result.components, model.componentCount()});
  const int all = model.componentCount();
  std::vector<bool> constant(model.bands, false);
  for (int b : model.constantBands) constant[b] = true;
  double yLo = 0, yHi = 0;
  for (int b = 0; b < model.bands; ++b)
    for (int k = 0; k < components; ++k) {
      yLo = std::min(yLo, model.eigenvectors[static_cast<size_t>(b) * all + k]);
      yHi = std::max(yHi, model.eigenvectors[static_cast<size_t>(b) * all + k]);
    }
  const svg::BandAxis bands(result.bands, result.input.wavelengths, result.input.wavelengthUnits);
  svg::Plot plot(QObject::tr("Loadings"), bands.axis(), {QObject::tr("loading"), yLo, yHi});
  plot.zeroLine();
  QStringList names;
  for (int k = 0; k < components; ++k) {
    std::vector<double> loading(model.bands);
    for (int b = 0; b < model.bands; ++b)
      loading[b] = constant[b] ? NAN : model.eigenvectors[static_cast<size_t>(b) * all + k];
    plot.line(bands.x(), bands.values(loading), svg::colour(k));
    names << wordingFor(model).component(k);
  }
  plot.legend(names);
  return plot.svg();
}

// One row per component: eigenvalue (and SNR for MNF), explained and cumulative share.
QString eigenvalueTable(const CovarianceResult& result) {
  const PcaModel& model = result.model;
  const bool mnf = model.transform == Transform::Mnf;
  QString html =
      QObject::tr("<h2>Eigenvalues</h2><table><tr><th>component</th><th>eigenvalue</th>");
  if (mnf) html += QObject::tr("<th>SNR</th>");
  html += QObject::tr("<th>explained %</th><th>cumulative %</th><th>in output</th></tr>");
  const int listed = std::min(model.componentCount(), result.components + 5);
  for (int k = 0; k < listed; ++k) {
    html += QString("<tr><td>%1</td><td>%2</td>")
                .arg(wordingFor(model).component(k))
                .arg(number(model.eigenvalues[k], 10));
    if (mnf) html += QString("<td>%1</td>").arg(number(model.signal(k), 8));
    html += QString("<td>%1</td><td>%2</td><td>%3</td></tr>")
                .arg(number(model.explainedPercent(k), 6))
                .arg(number(model.cumulativePercent(k), 8))
                .arg(k < result.components ? QObject::tr("yes") : QString());
  }
  html += "</table>";
  if (listed < model.componentCount())
    html += QObject::tr(
                "<p>%1 more components: in the statistics (JSON) and the component "
                "table (CSV).</p>")
                .arg(model.componentCount() - listed);
  return html;
}

// MNF: each band's standard deviation beside its noise estimate's.
QString noiseTable(const CovarianceResult& result) {
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

// A preview with its caption, beside the next one.
QString figure(const QuickLook& look, const QString& caption) {
  return QString(
             "<figure style='display:inline-block;margin:0 12px 12px 0;vertical-align:top'>%1"
             "<figcaption style='max-width:260px'>%2</figcaption></figure>")
      .arg(look.img(caption), caption.toHtmlEscaped());
}

// The run's facts: input, output, pixels, the fit, the components written or kept, the signal
// subspace, the device and the stages' seconds.
QString factsTable(const CovarianceResult& result, const PcaOptions& options, bool rebuilt) {
  const PcaModel& model = result.model;
  const Wording words = wordingFor(model);
  QString page = "<table>";
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
  if (rebuilt && model.transform == Transform::Pca && model.matrix == MatrixType::Covariance) {
    // What the left-out components held: the removed variance, and the RMS change per band it
    // makes (each pixel's change is its projection on them).
    double removed = 0, total = 0;
    for (int k = 0; k < model.componentCount(); ++k) {
      total += model.eigenvalues[k];
      if (k >= result.components) removed += model.eigenvalues[k];
    }
    row(QObject::tr("Removed"),
        QObject::tr("%1 % of the variance; an RMS change of %2 per band (the input's units)")
            .arg(number(total > 0 ? 100 * removed / total : 0, 4))
            .arg(number(std::sqrt(removed / std::max(1, model.bands)), 4)));
  }
  if (result.subspace)
    row(QObject::tr("Signal subspace"),
        QObject::tr("%1 dimensions by HySime%2; virtual dimensionality (Harsanyi-Farrand-Chang) "
                    "%3 / %4 / %5 at false-alarm rates 1e-3 / 1e-4 / 1e-5")
            .arg(result.subspace->dimension)
            .arg(options.components == kSignalSubspace ? QObject::tr(", the count kept") : "")
            .arg(result.subspace->virtualDimensionality[0])
            .arg(result.subspace->virtualDimensionality[1])
            .arg(result.subspace->virtualDimensionality[2]));
  row(QObject::tr("Device"), QString::fromStdString(result.backend));
  row(QObject::tr("Seconds"),
      QString("read %1, moments %2, eigen %3, projection %4, write %5, total %6")
          .arg(number(result.seconds.read, 3), number(result.seconds.moments, 3),
               number(result.seconds.eigen, 3), number(result.seconds.projection, 3),
               number(result.seconds.write, 3), number(result.seconds.total, 3)));
  return page + "</table>";
}

// The components' quick look, or a denoise's before, after and removed.
QString imageSections(const CovarianceResult& result, const ReportViews& views) {
  const QuickLook& components = views.components;
  const PcaModel& model = result.model;
  QString page;
  if (!components.dataUrl.isEmpty()) {
    const Wording words = wordingFor(model);
    const QString shown = result.components >= 3
                              ? QObject::tr("%1, %2 and %3 as red, green and blue")
                                    .arg(words.component(0), words.component(1), words.component(2))
                              : QObject::tr("%1 in grey").arg(words.component(0));
    page += QObject::tr(
                "<h2>Quick look</h2><p>%1, each stretched between its 2nd and 98th "
                "percentiles; invalid pixels transparent.</p>")
                .arg(shown) +
            components.img(QObject::tr("Quick look of the first components"));
  }
  if (!views.before.dataUrl.isEmpty() && !views.after.dataUrl.isEmpty())
    page += QObject::tr(
                "<h2>Before and after</h2><p>The input and the denoised image in natural "
                "colour (the bands nearest 650, 550 and 460 nm), each band stretched between "
                "its 2nd and 98th percentiles, and what was removed.</p>") +
            figure(views.before, QObject::tr("Input")) +
            figure(views.after, QObject::tr("Denoised")) +
            figure(views.residual,
                   QObject::tr("Removed: RMS of input − denoised over %1 bands, 2nd-98th "
                               "percentile")
                       .arg(views.residualBands));
  return page;
}

}  // namespace

QString htmlReport(const CovarianceResult& result, const PcaOptions& options,
                   const ReportViews& views) {
  const PcaModel& model = result.model;
  const Wording words = wordingFor(model);
  QString page = html::pageStart(words.title);
  const bool rebuilt = views.rebuilt;
  page +=
      "<h1>" +
      (rebuilt ? QObject::tr("Denoised with the %1").arg(words.heading.toLower()) : words.heading) +
      "</h1>";
  page += factsTable(result, options, rebuilt);
  page += QObject::tr(
              "<h2>Scree plot</h2><p>Each component's eigenvalue (blue, log scale) and the "
              "cumulative share of the %1 (red, right axis), the first %2 of %3.</p>")
              .arg(words.quantity)
              .arg(componentsShown(result))
              .arg(model.componentCount()) +
          screePlot(result, rebuilt);
  page += imageSections(result, views);
  page += QObject::tr("<h2>Loadings</h2>") + loadingsPlot(result);
  page += eigenvalueTable(result);
  if (model.transform == Transform::Mnf) page += noiseTable(result);
  page += "</table>" + html::pageEnd();
  return page;
}

void writeHtmlReport(const CovarianceResult& result, const PcaOptions& options,
                     const std::string& path, const ReportViews& views) {
  saveFileAtomically(path, htmlReport(result, options, views).toUtf8(), "OUTPUT_HTML_FILE");
}

}  // namespace hyperstream
