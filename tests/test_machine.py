"""Every row records the machine that ran it: the CPU model and count
(benchmarks.run.provenance.machine), whether the model passed or failed."""
import os

from benchmarks import cli
from benchmarks.run import provenance
from benchmarks.results import store

CONFIGS = """
defaults:
  batch_size: {accelerator: 2, cpu: 2}
  tolerance: {host: 1.0e-4, xla: 1.0e-2}
  cosine: false
"""


def test_cpu_model_of_x86_and_arm_cpuinfo(tmp_path):
    x86 = tmp_path / "x86"
    x86.write_text("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R)  Xeon(R) "
                   "Platinum 8370C CPU @ 2.80GHz\n\nprocessor\t: 1\nmodel name\t: Intel(R) Xeon(R)\n")
    assert provenance.cpu_model(x86) == "Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz"
    arm = tmp_path / "arm"
    arm.write_text("processor\t: 0\nBogoMIPS\t: 243.75\nCPU implementer\t: 0x41\n\nHardware\t: BCM2835\n")
    assert provenance.cpu_model(arm) == "BCM2835"  # ARM's processor field is an index, not a name


def test_a_model_name_without_a_number_says_the_cpus_generation(tmp_path):
    """A virtual machine's "AMD EPYC" hides which EPYC it is: the family,
    model and stepping tell two generations apart."""
    genoa = tmp_path / "genoa"
    genoa.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n"
                     "model name\t: AMD EPYC\nstepping\t: 1\n")
    assert provenance.cpu_model(genoa) == "AMD EPYC (cpu family 25, model 17, stepping 1)"
    named = tmp_path / "named"
    named.write_text("cpu family\t: 25\nmodel\t\t: 1\nmodel name\t: AMD EPYC 7763 64-Core Processor\n")
    assert provenance.cpu_model(named) == "AMD EPYC 7763 64-Core Processor"


def test_cpu_model_without_cpuinfo_is_what_platform_knows(tmp_path):
    name = provenance.cpu_model(tmp_path / "absent")
    assert name and "\n" not in name


def test_every_row_records_the_cpu(tmp_path, fault_models, capsys):
    configs = tmp_path / "models.yaml"
    configs.write_text(CONFIGS)
    out = tmp_path / "run.csv"
    code = cli.main(["--suite", "torchbench", "-k", "^(ok_mlp|raise_on_load)$", "--backend", "eager",
                     "--repeat", "3", "--warmup", "1", "--no-isolate", "--configs", str(configs),
                     "--output", str(out)])
    assert code == 0, capsys.readouterr().err
    df = store.read_rows(out)
    assert sorted(zip(df["name"], df["status"])) == [("ok_mlp", "pass"), ("raise_on_load", "model_fail_to_load")]
    assert set(df["cpu_model"]) == {provenance.cpu_model()}
    assert set(df["cpu_count"]) == {os.cpu_count()}
    assert set(df["schema_version"]) == {store.SCHEMA_VERSION} == {12}
    # Version 10: how busy other processes kept the machine while it was timed.
    assert (df.loc[df["status"] == "pass", "other_cores"] >= 0).all()
    assert df.loc[df["status"] != "pass", "other_cores"].isna().all()
    assert set(df["inputs"]) == {"fixed"}  # version 7: the row says which inputs it timed
