"""Writes tests/data/spp_endmembers_abundances.model3, the unmixing chain as a Processing model:
SPP -> endmembers (searched in the SPP output, spectra from the image) -> FCLS abundances.

Run with QGIS's Python and the plugin installed (its algorithms must be known to validate the
model):  python3 scripts/make_unmixing_model.py PLUGINS_DIR OUTPUT.model3
"""
import sys

plugins, output = sys.argv[1], sys.argv[2]
from qgis.core import (QgsApplication, QgsProcessingModelAlgorithm, QgsProcessingModelChildAlgorithm,
                       QgsProcessingModelChildParameterSource as Source, QgsProcessingModelOutput,
                       QgsProcessingModelParameter, QgsProcessingParameterNumber,
                       QgsProcessingParameterRasterLayer)
from qgis.PyQt.QtCore import QPointF

app = QgsApplication([], False)
app.initQgis()
sys.path[:0] = [plugins]
import hyperstream
hyperstream.classFactory(None).initProcessing()

model = QgsProcessingModelAlgorithm("SPP, endmembers and abundances", "Spectral unmixing",
                                    "hyperstreamunmixing")
model.setHelpContent({"ALG_DESC": "The unmixing chain: spatial preprocessing, N-FINDR endmembers "
                      "searched in the preprocessed image with their spectra taken from the "
                      "original, then each pixel's FCLS abundances."})


def add_input(definition, x, y):
    parameter = QgsProcessingModelParameter(definition.name())
    parameter.setPosition(QPointF(x, y))
    model.addModelParameter(definition, parameter)


add_input(QgsProcessingParameterRasterLayer("image", "Hyperspectral image"), 120, 60)
add_input(QgsProcessingParameterNumber("endmember_count", "Number of endmembers",
                                       QgsProcessingParameterNumber.Integer, 5, False, 2, 32),
          420, 60)


def child(child_id, algorithm, description, x, y, sources, outputs):
    step = QgsProcessingModelChildAlgorithm(algorithm)
    step.setChildId(child_id)
    step.setDescription(description)
    step.setPosition(QPointF(x, y))
    for name, source in sources.items():
        step.addParameterSources(name, [source])
    for name, (label, ox, oy) in outputs.items():
        out = QgsProcessingModelOutput(label)
        out.setChildOutputName(name)
        out.setChildId(child_id)
        out.setPosition(QPointF(ox, oy))
        step.setModelOutputs({**step.modelOutputs(), label: out})
    model.addChildAlgorithm(step)


shared = {"DEVICE": Source.fromStaticValue(0), "RAM_MB": Source.fromStaticValue(1024),
          "CREATION_OPTIONS": Source.fromStaticValue("")}
image = Source.fromModelParameter("image")
child("spp", "hyperstream:spp", "Spatial preprocessing", 200, 200,
      {"INPUT": image, "WINDOW": Source.fromStaticValue(5), "BORDER": Source.fromStaticValue(0),
       "OUTPUT_TYPE": Source.fromStaticValue(0), **shared}, {})
child("endmembers", "hyperstream:endmembers", "N-FINDR endmembers", 420, 330,
      {"INPUT": image, "LOCATIONS": Source.fromChildOutput("spp", "OUTPUT"),
       "COUNT": Source.fromModelParameter("endmember_count"), "METHOD": Source.fromStaticValue(1),
       "AVERAGE_WINDOW": Source.fromStaticValue(3), "VCA_PROJECTION": Source.fromStaticValue(0),
       "SEED": Source.fromStaticValue(1), "DEVICE": Source.fromStaticValue(0),
       "RAM_MB": Source.fromStaticValue(1024)},
      {"OUTPUT": ("Endmember table", 700, 300), "OUTPUT_POINTS": ("Endmember pixels", 700, 370)})
child("abundances", "hyperstream:abundances", "FCLS abundances", 420, 470,
      {"INPUT": image, "ENDMEMBERS": Source.fromChildOutput("endmembers", "OUTPUT"),
       "METHOD": Source.fromStaticValue(0), "OUTPUT_TYPE": Source.fromStaticValue(0), **shared},
      {"OUTPUT": ("Abundances", 700, 470), "OUTPUT_RMSE": ("Reconstruction error", 700, 540)})

ok, errors = model.validate()
if not ok:
    sys.exit("invalid model: " + "; ".join(errors))
if not model.toFile(output):
    sys.exit("cannot write " + output)
print(output)
