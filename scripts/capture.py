"""Rule capture: one prefill of one document, sampled rows + side statistics, validated; with
access_law.enabled also the access-law records beside the shard.

Glue only: the capture lives in trustmass.capture.prefill, shard writing in trustmass.capture.shards (the
format is trustmass.contracts.shards), the access laws in trustmass.capture.access (trustmass.contracts.access),
model loading in trustmass.sources.loading.
"""

from trustmass.plumbing.rule_io import run_rule  # first: it opens the job's log before anything heavy imports


def main(snakemake, started):
    import json
    import sys
    import time
    from pathlib import Path

    import torch

    from trustmass.capture import prefill as cap
    from trustmass.capture import shards
    from trustmass.capture.access import AccessLaws, AccessOptions, planted_target
    from trustmass.plumbing.integrity import verify_output
    from trustmass.plumbing.rule_io import finish, write_parquet
    from trustmass.sources.documents import load_documents
    from trustmass.sources.loading import load_prepared_model, prepared_shapes, resolve_device, source_record
    from trustmass.sources.shapes import check_declared_shape

    model_name, corpus, doc = (snakemake.wildcards.model, snakemake.wildcards.corpus, snakemake.wildcards.doc)
    settings = dict(snakemake.params.capture["capture"])
    model_dir = Path(snakemake.input.model).parent

    shapes = prepared_shapes(model_dir)
    if snakemake.params.declared:
        check_declared_shape(shapes, snakemake.params.declared, name=model_name)

    device = resolve_device(settings.pop("device", "auto"))
    torch.set_num_threads(snakemake.threads)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.manual_seed(snakemake.params.seed)

    documents = Path(snakemake.input.documents)
    verify_output(  # the document set (ids and manifest) is the one tokenize_documents wrote
        documents,
        recorded_inputs=[documents.with_suffix(".json")],
        fix=f"delete it (rm {documents.with_suffix('')}.*) and rerun: the tokenize_documents rule writes it again",
    )
    ids, manifest = load_documents(documents)
    index = int(doc)
    if index >= ids.shape[0]:
        sys.exit(f"capture: document {doc} requested but {snakemake.input.documents} holds {ids.shape[0]}")
    record = manifest["documents"][index]
    doc_id = record["id"]
    options = cap.CaptureOptions(
        rows_per_head=settings["rows_per_head"],
        min_position=settings["min_position"],
        max_position=settings.get("max_position"),
        seed=snakemake.params.seed,
        windows=tuple(settings["windows"]),
        max_abs_deviation=settings["max_abs_deviation"],
        emulate_logits_dtype=settings["emulate_logits_dtype"],
        block_rows=settings["block_rows"],
        # a task context (trustmass.sources.task_contexts) names the rows that must retrieve its planted content
        retrieval_positions=tuple(record.get("retrieval_positions", ())),
        retrieval_rows=int(record.get("retrieval_rows", 0)),
    )
    access = None
    if "access" in snakemake.output.keys():  # access_law.enabled
        settings_access = snakemake.params.access["access_law"]
        access = AccessLaws(
            AccessOptions(
                tail_rows=tuple(settings_access["tail_rows"]),
                dilution_rows=int(settings_access["dilution_rows"]),
                target=planted_target(record, ids[index]),
            )
        )
    print(f"capture {model_name}/{corpus}/{doc} ({doc_id}): {ids.shape[1]} tokens on {device}; {options}")
    if access is not None:
        print(f"access laws: {access.options}")
    print(f"shapes: {json.dumps(shapes)}")

    cap.register()  # the capture attention function, under the name cap.ATTENTION_NAME
    model = load_prepared_model(model_dir, cap.ATTENTION_NAME, device)
    t0 = time.time()
    result = cap.capture_document(model, torch.as_tensor(ids[index]), model_name, doc_id, options, access=access)
    print(f"captured in {time.time() - t0:.1f} s; max |sum p v - own output| = {result.max_abs_deviation:.3g}")

    digest = shards.write_shard(result, snakemake.output.shard)
    summary = shards.write_validation_report(result, snakemake.output.report)
    outputs, extra = [snakemake.output.shard, snakemake.output.report], {}
    if access is not None:
        write_parquet(
            access.frame(model=model_name, corpus=corpus, doc=doc, doc_id=doc_id, task=record.get("task")),
            snakemake.output.access,
        )
        outputs.append(snakemake.output.access)
        extra["access"] = {
            "seconds": access.seconds,
            "decode_token": access.decode_token,
            "target": list(access.options.target),
            "decode_max_abs_dev": access.max_abs_deviation,
        }
        print(
            f"access laws: {access.seconds:.2f} s of the capture; decode token {access.decode_token}, "
            f"max |sum p* v - own output| = {access.max_abs_deviation:.3g}"
        )
    finish(
        snakemake,
        outputs,
        [snakemake.input.model, snakemake.input.source, snakemake.input.documents, *snakemake.input.code],
        {"capture": snakemake.params.capture["capture"], "seed": snakemake.params.seed, **snakemake.params.access},
        started,
        seeds={"seed": snakemake.params.seed},
        shard_sha256=digest,
        validation=summary,
        document=record,
        model_shapes=shapes,
        model_source=source_record(model_dir),
        device=device,
        capture_seconds=time.time() - t0,
        **extra,
    )


run_rule(snakemake, main)
