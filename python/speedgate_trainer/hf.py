"""Hugging Face Trainer support: a transformers.Trainer script becomes a protocol trainer.

    import speedgate_trainer.hf as sghf

    def build(ctx, args):                  # args: TrainingArguments from the run + switches
        model = AutoModelForCausalLM.from_config(config, **sghf.model_kwargs(ctx))
        return Trainer(model=model, args=args, train_dataset=train, eval_dataset=held_out,
                       data_collator=collate)

    sghf.run_main("my-hf-trainer", "1.0", [sg.Workload("lm", SIZES, describe)], build)

The switches are the TrainingArguments (and the attention implementation) HF users flip;
SpeedgateCallback records each optimizer step's loss (the model's own output, averaged
over the micro-batches) and grad norm (the Trainer's clipping, so max_grad_norm must stay
> 0), times the steps and writes the heartbeat.
"""

import dataclasses
import math
import tempfile

from . import availability, cli
from .switches import Switch


def _need_sdpa():
    if not availability.torch_at_least(2, 1):
        return "transformers' sdpa attention needs torch >= 2.1.1"
    return ""


# identity: measured on examples/hf_trainer (its README says how, and on which torch).
SWITCHES = [
    Switch("TORCH_COMPILE", identity="tolerance", available=availability.compile,
           doc="TrainingArguments(torch_compile=True)"),
    Switch("ATTN_IMPLEMENTATION", type="enum", values=["eager", "sdpa"], default="eager",
           identity="tolerance", available=_need_sdpa,
           doc="the model's attn_implementation (through model_kwargs(ctx))"),
    Switch("BF16", identity="tolerance", doc="TrainingArguments(bf16=True): bf16 autocast"),
    Switch("TF32", identity="tolerance", available=availability.tf32,
           doc="TrainingArguments(tf32=True): TF32 matmuls on Ampere+"),
    Switch("GRADIENT_CHECKPOINTING", identity="bitwise", effect="memory",
           doc="TrainingArguments(gradient_checkpointing=True): recompute activations"),
    Switch("OPTIM", type="enum", values=["adamw_torch", "adamw_torch_fused"],
           default="adamw_torch", identity="tolerance", available=availability.fused_adamw,
           doc="TrainingArguments(optim=...)"),
    Switch("DATALOADER_NUM_WORKERS", type="int", min=0, max=16, values=["0", "1", "2"],
           default="0", identity="bitwise", doc="TrainingArguments(dataloader_num_workers=N)"),
    Switch("DATALOADER_PIN_MEMORY", default="1", identity="bitwise",
           doc="TrainingArguments(dataloader_pin_memory=...): HF's default is on"),
    Switch("GROUP_BY_LENGTH", identity="tolerance", effect="schedule",
           doc="TrainingArguments(group_by_length=True): batches of similar lengths. It "
               "changes which samples share a batch, not only rounding: a rounding-calibrated "
               "gate should reject it"),
]


def model_kwargs(ctx):
    """Keyword arguments for from_config / from_pretrained that the switches decide."""
    return {"attn_implementation": ctx.switches["ATTN_IMPLEMENTATION"]}


def training_arguments(ctx, output_dir, **base):
    """TrainingArguments for this run: the protocol's steps, batch, accumulation and seed,
    the switches, and `base` (learning rate, schedule, ...) for everything else."""
    import transformers
    on = ctx.on
    kw = dict(base)
    kw.update(output_dir=output_dir, max_steps=ctx.num_steps, seed=ctx.seed, data_seed=ctx.seed,
              per_device_train_batch_size=ctx.micro_batch,
              per_device_eval_batch_size=ctx.micro_batch,
              gradient_accumulation_steps=ctx.grad_accum, logging_steps=1,
              logging_strategy="steps", logging_nan_inf_filter=False, save_strategy="no",
              report_to=[], disable_tqdm=True, use_cpu=ctx.device.type == "cpu",
              torch_compile=on("TORCH_COMPILE"), bf16=on("BF16"),
              tf32=True if on("TF32") else None,
              gradient_checkpointing=on("GRADIENT_CHECKPOINTING"), optim=ctx.value("OPTIM"),
              dataloader_num_workers=ctx.int("DATALOADER_NUM_WORKERS"),
              dataloader_pin_memory=on("DATALOADER_PIN_MEMORY"),
              group_by_length=on("GROUP_BY_LENGTH"))
    kw.setdefault("max_grad_norm", 1.0)
    if kw["max_grad_norm"] <= 0:
        raise ValueError("max_grad_norm must be > 0: the grad norm comes from its clipping")
    fields = {f.name for f in dataclasses.fields(transformers.TrainingArguments)}
    for new, old in (("use_cpu", "no_cuda"), ("eval_strategy", "evaluation_strategy")):
        if new in kw and new not in fields:
            kw[old] = kw.pop(new)
    return transformers.TrainingArguments(**{k: v for k, v in kw.items() if k in fields})


def callback(ctx):
    """A TrainerCallback feeding `ctx` (built lazily: transformers is imported only here)."""
    import transformers

    class SpeedgateCallback(transformers.TrainerCallback):
        def __init__(self):
            self.losses, self.hook, self.step_loss = [], None, None

        def _on_forward(self, module, inputs, output):
            loss = getattr(output, "loss", None)
            if module.training and loss is not None:
                self.losses.append(loss.detach().float())

        def on_train_begin(self, args, state, control, model=None, optimizer=None, **kw):
            ctx.watch(model, optimizer)
            self.hook = model.register_forward_hook(self._on_forward)

        def on_step_begin(self, args, state, control, **kw):
            self.losses = []
            ctx.begin_step()

        def on_step_end(self, args, state, control, **kw):
            import torch
            self.step_loss = torch.stack(self.losses).mean() if self.losses else float("nan")

        def on_log(self, args, state, control, logs=None, **kw):
            if logs is None or "grad_norm" not in logs or self.step_loss is None:
                return
            loss, self.step_loss = self.step_loss, None
            ctx.record(ctx.average(loss) if not isinstance(loss, float) else loss,
                       logs["grad_norm"])
            ctx.end_step()

        def on_train_end(self, args, state, control, **kw):
            if self.hook is not None:
                self.hook.remove()

    return SpeedgateCallback()


def make_trainer(name, version, workloads, build, base_args=None, switches=(), prog=None):
    """A speedgate_trainer.Trainer that runs `build(ctx, training_args)`'s HF Trainer.
    `switches`: the trainer's own switches besides SWITCHES."""
    base_args = dict(base_args or {})

    def train(ctx):
        import torch
        import transformers
        transformers.set_seed(ctx.seed)
        with tempfile.TemporaryDirectory(prefix="sg-hf-") as out:
            trainer = build(ctx, training_arguments(ctx, out, **base_args))
            trainer.add_callback(callback(ctx))
            trainer.train()
            n = ctx.args.eval_batches * ctx.micro_batch
            if n and trainer.eval_dataset is not None:
                subset = torch.utils.data.Subset(trainer.eval_dataset,
                                                 range(min(n, len(trainer.eval_dataset))))
                loss = trainer.evaluate(eval_dataset=subset)["eval_loss"]
                ctx.eval_loss = loss if math.isfinite(loss) else float("nan")
        if trainer.optimizer is not None:
            ctx.optimizer = trainer.optimizer

    return cli.Trainer(name, version, workloads, list(SWITCHES) + list(switches), train,
                       device="auto", prog=prog)


def run_main(name, version, workloads, build, base_args=None, switches=(), prog=None):
    cli.run_main(make_trainer(name, version, workloads, build, base_args, switches, prog))
