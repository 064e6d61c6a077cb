#include "HelpPages.h"

#include "QgisCompat.h"
#include "io/HtmlPage.h"

#include <qgsprocessingalgorithm.h>
#include <qgsprocessingoutputs.h>
#include <qgsprocessingparameters.h>
#include <qgsprocessingprovider.h>

#include <QDir>
#include <QFile>
#include <QSaveFile>

namespace hyperstream {

namespace {

// What a text parameter takes.
QString textTaken(const QString& name) {
  if (name == QLatin1String("CREATION_OPTIONS"))
    return QObject::tr("text: creation options, NAME=VALUE joined by |");
  if (name == QLatin1String("BAND_LIST"))
    return QObject::tr("text: band numbers and ranges, e.g. 1-100,120-198");
  if (name == QLatin1String("EXCLUDE_NM"))
    return QObject::tr("text: wavelength ranges in nanometres, e.g. 1340-1450,1790-1960");
  return QObject::tr("text");
}

// What a parameter takes, as qgis_process and processing.run() take it.
QString valuesTaken(const QgsProcessingParameterDefinition& parameter) {
  QString type = parameter.type();
  if (const auto* choice = dynamic_cast<const QgsProcessingParameterEnum*>(&parameter)) {
    QStringList options;
    for (int i = 0; i < choice->options().size(); ++i)
      options << QStringLiteral("%1: %2").arg(i).arg(choice->options().at(i));
    return QObject::tr("one of %1").arg(options.join(QStringLiteral(", ")));
  }
  if (const auto* number = dynamic_cast<const QgsProcessingParameterNumber*>(&parameter)) {
    const bool integer = number->dataType() == compat::kInteger;
    QString text = integer ? QObject::tr("integer") : QObject::tr("number");
    if (number->minimum() > -1e300) text += QObject::tr(", at least %1").arg(number->minimum());
    if (number->maximum() < 1e300) text += QObject::tr(", at most %1").arg(number->maximum());
    return text;
  }
  if (type == QgsProcessingParameterRasterLayer::typeName())
    return QObject::tr("raster layer, file or GDAL name (e.g. NETCDF:\"scene.nc\":reflectance)");
  if (type == QgsProcessingParameterBand::typeName()) return QObject::tr("band numbers (1-based)");
  if (type == QgsProcessingParameterFile::typeName()) return QObject::tr("file");
  if (type == QgsProcessingParameterString::typeName()) return textTaken(parameter.name());
  if (type == QgsProcessingParameterBoolean::typeName()) return QObject::tr("true or false");
  if (type == QgsProcessingParameterRasterDestination::typeName())
    return QObject::tr("raster file to write");
  if (type == QgsProcessingParameterVectorDestination::typeName())
    return QObject::tr("vector file to write");
  if (type == QgsProcessingParameterFileDestination::typeName())
    return QObject::tr("file to write (%1)")
        .arg(static_cast<const QgsProcessingParameterFileDestination&>(parameter).fileFilter());
  return type;
}

QString defaultText(const QgsProcessingParameterDefinition& parameter) {
  const QVariant value = parameter.defaultValue();
  if (!value.isValid() || value.isNull() || value.toString().isEmpty())
    return parameter.flags() & compat::kOptional ? QObject::tr("optional") : QString();
  return value.toString();
}

QString parameterRow(const QgsProcessingParameterDefinition& parameter) {
  QString name = "<code>" + parameter.name() + "</code>";
  if (parameter.flags() & compat::kAdvanced) name += QObject::tr("<br><small>advanced</small>");
  return QStringLiteral("<tr><td>%1</td><td>%2</td><td>%3</td><td>%4</td><td>%5</td></tr>")
      .arg(name, parameter.description().toHtmlEscaped(), valuesTaken(parameter).toHtmlEscaped(),
           defaultText(parameter).toHtmlEscaped(), parameter.help().toHtmlEscaped());
}

QString usage(const QgsProcessingAlgorithm& algorithm) {
  QStringList arguments;
  for (const QgsProcessingParameterDefinition* parameter : algorithm.parameterDefinitions())
    if (!(parameter->flags() & compat::kOptional)) arguments << parameter->name() + "=…";
  return QStringLiteral("qgis_process run %1 -- %2").arg(algorithm.id(), arguments.join(' '));
}

const char* kTableStyle =
    "<style>td,th{text-align:left;vertical-align:top}code{white-space:nowrap}</style>";

bool writeFile(const QString& path, const QString& text, QString* error) {
  QSaveFile file(path);
  if (file.open(QIODevice::WriteOnly) && file.write(text.toUtf8()) >= 0 && file.commit())
    return true;
  if (error) *error = QObject::tr("cannot write %1: %2").arg(path, file.errorString());
  return false;
}

}  // namespace

QString helpPage(const QgsProcessingAlgorithm& algorithm) {
  QString page = html::pageStart(QStringLiteral("Hyperstream: %1").arg(algorithm.displayName()));
  page += kTableStyle;
  page += QStringLiteral("<h1>%1</h1><p><code>%2</code> · %3 · <a href='index.html'>%4</a></p>")
              .arg(algorithm.displayName().toHtmlEscaped(), algorithm.id(),
                   algorithm.group().toHtmlEscaped(), QObject::tr("all algorithms"));
  for (const QString& paragraph : algorithm.shortHelpString().split(QStringLiteral("\n\n")))
    page += "<p>" + paragraph.toHtmlEscaped() + "</p>";
  page += QObject::tr(
      "<h2>Parameters</h2><table><tr><th>Name</th><th>Label</th><th>Takes</th>"
      "<th>Default</th><th>What it does</th></tr>");
  for (const QgsProcessingParameterDefinition* parameter : algorithm.parameterDefinitions())
    page += parameterRow(*parameter);
  page += QObject::tr("</table><h2>Results</h2><table><tr><th>Name</th><th>What it is</th></tr>");
  for (const QgsProcessingOutputDefinition* output : algorithm.outputDefinitions())
    page += QStringLiteral("<tr><td><code>%1</code></td><td>%2</td></tr>")
                .arg(output->name(), output->description().toHtmlEscaped());
  page += QObject::tr("</table><h2>From the command line</h2><pre>%1</pre>")
              .arg(usage(algorithm).toHtmlEscaped());
  return page + html::pageEnd();
}

bool writeHelpPages(const QgsProcessingProvider& provider, const QString& folder, QString* error) {
  if (!QDir().mkpath(folder)) {
    if (error) *error = QObject::tr("cannot create %1").arg(folder);
    return false;
  }
  QString index = html::pageStart(QObject::tr("Hyperstream algorithms")) + kTableStyle +
                  QObject::tr(
                      "<h1>Hyperstream algorithms</h1><table><tr><th>Algorithm</th>"
                      "<th>Group</th><th>Id</th></tr>");
  for (const QgsProcessingAlgorithm* algorithm : provider.algorithms()) {
    if (!writeFile(QDir(folder).filePath(algorithm->name() + ".html"), helpPage(*algorithm), error))
      return false;
    index += QStringLiteral(
                 "<tr><td><a href='%1.html'>%2</a></td><td>%3</td><td><code>%4</code>"
                 "</td></tr>")
                 .arg(algorithm->name(), algorithm->displayName().toHtmlEscaped(),
                      algorithm->group().toHtmlEscaped(), algorithm->id());
  }
  return writeFile(QDir(folder).filePath(QStringLiteral("index.html")),
                   index + "</table>" + html::pageEnd(), error);
}

}  // namespace hyperstream
