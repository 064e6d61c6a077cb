"""Writes the example models of tests/data (the plugin ships them in its models/ folder): each laid
out for the Model Designer, every child parameter set (the Designer marks a model invalid while a
mandatory one is unset), validated before it is written.
  - pca_then_statistics.model3: PCA, then the first component's statistics (native).
  - spp_endmembers_abundances.model3: noise-adjusted SPP, N-FINDR endmembers searched in the SPP
    output with their spectra taken from the image, then FCLS abundances.
  - endmembers_detect.model3: endmembers found by ATGP, then each one's ACE scores over the image
    in its signal subspace (where else each material lies), and the spectral angle mapper's
    classes against the same table (which material each pixel is nearest to).

Run with QGIS's Python and the plugin installed (its algorithms must be known):
    python3 scripts/make_models.py PLUGINS_DIR OUTPUT_DIR
"""
import os
import sys

plugins, output_dir = sys.argv[1], sys.argv[2]
from qgis.core import (QgsApplication, QgsProcessingModelAlgorithm, QgsProcessingModelChildAlgorithm,
                       QgsProcessingModelChildParameterSource as Source, QgsProcessingModelOutput,
                       QgsProcessingModelParameter, QgsProcessingParameterNumber,
                       QgsProcessingParameterRasterLayer)
from qgis.PyQt.QtCore import QPointF

app = QgsApplication([], False)
app.initQgis()
sys.path[:0] = ["/usr/share/qgis/python/plugins", plugins]
from processing.core.Processing import Processing
Processing.initialize()  # the native algorithms
import hyperstream
hyperstream.classFactory(None).initProcessing()


def add_input(model, definition, x, y):
    parameter = QgsProcessingModelParameter(definition.name())
    parameter.setPosition(QPointF(x, y))
    model.addModelParameter(definition, parameter)


def add_child(model, child_id, algorithm, description, x, y, sources, outputs):
    """sources: parameter -> Source; outputs: child output -> (name, description, x, y). Every
    other parameter gets its default, as the Designer's dialog gives it."""
    step = QgsProcessingModelChildAlgorithm(algorithm)
    step.setChildId(child_id)
    step.setDescription(description)
    step.setPosition(QPointF(x, y))
    for parameter in step.algorithm().parameterDefinitions():
        if parameter.isDestination():
            continue
        source = sources.get(parameter.name(), Source.fromStaticValue(parameter.defaultValue()))
        step.addParameterSources(parameter.name(), [source])
    model_outputs = {}
    for child_output, (name, label, ox, oy) in outputs.items():
        out = QgsProcessingModelOutput(name, label)
        out.setChildOutputName(child_output)
        out.setChildId(child_id)
        out.setPosition(QPointF(ox, oy))
        model_outputs[name] = out
    step.setModelOutputs(model_outputs)
    model.addChildAlgorithm(step)


def write(model, name):
    ok, errors = model.validate()
    if not ok:
        sys.exit(name + " is invalid: " + "; ".join(errors))
    path = os.path.join(output_dir, name)
    if not model.toFile(path):
        sys.exit("cannot write " + path)
    print(path)


pca = QgsProcessingModelAlgorithm("PCA then band statistics", "Hyperstream examples")
pca.setHelpContent({"ALG_DESC": "Principal component analysis of a raster, then the statistics "
                    "of its first component (QGIS's Raster layer statistics)."})
add_input(pca, QgsProcessingParameterRasterLayer("scene", "Scene"), 120, 60)
add_input(pca, QgsProcessingParameterNumber("components", "Components",
                                            QgsProcessingParameterNumber.Integer, 3, False, 1),
          400, 60)
add_child(pca, "pca", "hyperstream:pca", "Principal component analysis", 260, 190,
          {"INPUT": Source.fromModelParameter("scene"),
           "COMPONENTS": Source.fromModelParameter("components")},
          {"OUTPUT": ("components_raster", "Principal components", 560, 160)})
add_child(pca, "stats", "native:rasterlayerstatistics", "Statistics of PC1", 260, 330,
          {"INPUT": Source.fromChildOutput("pca", "OUTPUT"), "BAND": Source.fromStaticValue(1)},
          {"OUTPUT_HTML_FILE": ("pc1_statistics", "PC1 statistics", 560, 360)})
write(pca, "pca_then_statistics.model3")

chain = QgsProcessingModelAlgorithm("SPP, endmembers and abundances", "Hyperstream examples")
chain.setHelpContent({"ALG_DESC": "The unmixing chain: spatial preprocessing (noise-adjusted, so "
                      "that dark homogeneous areas such as water keep their place), N-FINDR endmembers "
                      "searched in the preprocessed image with their spectra taken from the "
                      "original (each the mean of the most homogeneous 3 x 3 window), then each "
                      "pixel's FCLS abundances."})
add_input(chain, QgsProcessingParameterRasterLayer("image", "Hyperspectral image"), 120, 60)
# Named so that QGIS 3.22, which orders a model's inputs by name, asks for the image first; 0
# (the default) takes the image's signal subspace (HySime) as the count.
add_input(chain, QgsProcessingParameterNumber("number_of_endmembers",
                                              "Number of endmembers (0: as many as the scene has materials)",
                                              QgsProcessingParameterNumber.Integer, 0, False, 0,
                                              32), 420, 60)
image = Source.fromModelParameter("image")
add_child(chain, "spp", "hyperstream:spp", "Spatial preprocessing", 200, 190,
          {"INPUT": image, "NOISE_ADJUSTED": Source.fromStaticValue(True)}, {})
add_child(chain, "endmembers", "hyperstream:endmembers", "N-FINDR endmembers", 420, 320,
          {"INPUT": image, "LOCATIONS": Source.fromChildOutput("spp", "OUTPUT"),
           "COUNT": Source.fromModelParameter("number_of_endmembers"),
           "METHOD": Source.fromStaticValue(1), "AVERAGE_WINDOW": Source.fromStaticValue(3)},
          {"OUTPUT": ("table", "Endmember table", 720, 290),
           "OUTPUT_POINTS": ("points", "Endmember pixels", 720, 350)})
add_child(chain, "abundances", "hyperstream:abundances", "FCLS abundances", 420, 460,
          {"INPUT": image, "ENDMEMBERS": Source.fromChildOutput("endmembers", "OUTPUT")},
          {"OUTPUT": ("abundances", "Abundances", 720, 450),
           "OUTPUT_RMSE": ("rmse", "Reconstruction error (RMSE)", 720, 510)})
write(chain, "spp_endmembers_abundances.model3")

detect = QgsProcessingModelAlgorithm("Detect targets found by endmembers", "Hyperstream examples")
detect.setHelpContent({"ALG_DESC": "Endmembers found in the image by ATGP (the pixels most unlike "
                       "the others, in turn), then each one's adaptive cosine estimator (ACE) over "
                       "the whole image, in the image's signal subspace (HySime): where else each material "
                       "lies, whatever its brightness; and the spectral angle mapper's class of each "
                       "pixel against the same endmembers (within 0.1 rad)."})
add_input(detect, QgsProcessingParameterRasterLayer("image", "Hyperspectral image"), 120, 60)
add_input(detect, QgsProcessingParameterNumber("number_of_targets",
                                               "Number of targets (0: as many as the scene has materials)",
                                               QgsProcessingParameterNumber.Integer, 0, False, 0,
                                               32), 420, 60)
image = Source.fromModelParameter("image")
add_child(detect, "endmembers", "hyperstream:endmembers", "ATGP endmembers", 260, 190,
          {"INPUT": image, "COUNT": Source.fromModelParameter("number_of_targets"),
           "METHOD": Source.fromStaticValue(2)},
          {"OUTPUT": ("targets", "Target table", 560, 160)})
add_child(detect, "detect", "hyperstream:detect", "ACE scores", 260, 330,
          {"INPUT": image, "TARGETS": Source.fromChildOutput("endmembers", "OUTPUT"),
           "METHOD": Source.fromStaticValue(1), "SIGNAL_SUBSPACE": Source.fromStaticValue(True)},
          {"OUTPUT": ("scores", "ACE scores", 560, 360)})
add_child(detect, "sam", "hyperstream:sam", "SAM classes", 260, 470,
          {"INPUT": image, "LIBRARY": Source.fromChildOutput("endmembers", "OUTPUT"),
           "MAX_ANGLE": Source.fromStaticValue(0.1)},
          {"OUTPUT": ("classes", "SAM classes", 560, 500)})
write(detect, "endmembers_detect.model3")
