# The claims table: the paper's statements, and a few derived ones, checked on the run's
# own tables (wordsens.claims). Verdicts are facts about the run: a claim that fails is a row of the
# table, never a failed job.


rule claims:
    input:
        unpack(get_claims_tables),
    output:
        csv=f"{RES}/tables/claims.csv",
        html=report(
            f"{RES}/tables/claims.html",
            caption="../report/claims.rst",
            category="Claims",
        ),
    log:
        f"{LOGS}/claims/claims.log",
    localrule: True
    conda:
        ENV
    params:
        # the grid points the limits left out: a "not run" row each
        left_out=GRID.left_out(),
    script:
        "../../scripts/claims.py"
