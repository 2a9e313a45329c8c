"""pvisor's mini-swe-agent runner: continues a rebuilt trajectory with mini's
own agent, model and environment classes (mini-swe-agent 1.x or 2.x).

Usage: python runner.py REQUEST.json, with the venv's python. The request
names the rebuilt trajectory, where to write the continued one, the
workspace, the bridge URL, the model calls the prefix made and the step
limit; the bridge token comes in OPENAI_API_KEY (litellm's openai provider
reads it there, so it never enters a config mini saves). The agent
resumes with agent.messages restored and continues with agent.step() until
it exits; the trajectory is written with mini's own save, then the saved
model config is put back as recorded (the bridge URL and token are never
stored).
"""

import copy
import dataclasses
import importlib
import json
import signal
import sys
from pathlib import Path

import minisweagent

EXIT_UNSUPPORTED = 11


class Stopped(BaseException):
    """SIGTERM: pvisor stops the runner at the step budget. A BaseException,
    so mini's own handlers let it through and its saves still run."""


def stop(signum, frame):
    raise Stopped()


def load_class(spec, kind):
    module, _, name = spec.rpartition(".")
    if not module.startswith("minisweagent."):
        sys.exit(f"pvisor-mini-runner: the trajectory's {kind} {spec} is not one of mini-swe-agent's own classes")
    return getattr(importlib.import_module(module), name)


def accepted(cls, config):
    """The config keys the class's config accepts (1.x dataclasses reject others)."""
    cfg_class = getattr(cls, "config_class", None)
    init = getattr(cls.__init__, "__kwdefaults__", None) or {}
    cfg_class = init.get("config_class", cfg_class)
    if cfg_class is not None and dataclasses.is_dataclass(cfg_class):
        names = {f.name for f in dataclasses.fields(cfg_class)}
        return {k: v for k, v in config.items() if k in names}
    return config


def main():
    req = json.loads(Path(sys.argv[1]).read_text())
    major = int(minisweagent.__version__.split(".")[0])
    data = json.loads(Path(req["trajectory"]).read_text())
    fmt = data.get("trajectory_format", "mini-swe-agent-1")
    if (fmt == "mini-swe-agent-1") != (major < 2):
        print(f"pvisor-mini-runner: mini-swe-agent {minisweagent.__version__} cannot continue a {fmt} trajectory", file=sys.stderr)
        sys.exit(EXIT_UNSUPPORTED)
    cfg = data["info"]["config"]
    recorded_model = copy.deepcopy(cfg.get("model", {}))

    model_cfg = copy.deepcopy(cfg.get("model", {}))
    # The bridge speaks Chat Completions: litellm's openai provider, the
    # recorded model name as the request's model.
    name = model_cfg.get("model_name", "")
    model_cfg["model_name"] = "openai/" + name.split("/", 1)[-1] if "/" in name else "openai/" + name
    model_cfg.setdefault("model_kwargs", {})
    model_cfg["model_kwargs"]["api_base"] = req["api_base"]
    model_cfg["cost_tracking"] = "ignore_errors"
    model_class = load_class(cfg.get("model_type", "minisweagent.models.litellm_model.LitellmModel"), "model_type")
    model = model_class(**accepted(model_class, model_cfg))

    env_cfg = copy.deepcopy(cfg.get("environment", {}))
    env_cfg["cwd"] = req["workspace"]
    env_class = load_class(cfg.get("environment_type", "minisweagent.environments.local.LocalEnvironment"), "environment_type")
    env = env_class(**accepted(env_class, env_cfg))

    agent_cfg = copy.deepcopy(cfg.get("agent", {}))
    agent_cfg.update(mode="yolo", confirm_exit=False)
    out = Path(req["output"])
    if major >= 2:
        agent_cfg["output_path"] = str(out)
    agent_class = load_class(cfg.get("agent_type", "minisweagent.agents.default.DefaultAgent"), "agent_type")
    agent = agent_class(model, env, **accepted(agent_class, agent_cfg))
    agent.messages = data["messages"]
    signal.signal(signal.SIGTERM, stop)
    status = "Stopped"
    try:
        if major >= 2:
            agent.n_calls = req["prefix_model_calls"]
            status = run_v2(agent)
        else:
            model.n_calls = req["prefix_model_calls"]
            status = run_v1(agent, out)
    except Stopped:
        pass
    finally:
        restore_model_config(out, recorded_model)
    print(json.dumps({"exit_status": status}))


def run_v2(agent):
    from minisweagent.exceptions import FormatError, InterruptAgentFlow

    # DefaultAgent.run's loop, without its reset of the messages.
    while True:
        try:
            agent.step()
            agent.n_consecutive_format_errors = 0
        except FormatError as e:
            agent.cost += e.messages[0].get("extra", {}).get("cost", 0.0)
            agent.n_consecutive_format_errors += 1
            limit = agent.config.max_consecutive_format_errors
            if 0 < limit <= agent.n_consecutive_format_errors:
                agent.add_messages(
                    *e.messages,
                    {"role": "exit", "content": "RepeatedFormatError",
                     "extra": {"exit_status": "RepeatedFormatError", "submission": ""}},
                )
            else:
                agent.add_messages(*e.messages)
        except InterruptAgentFlow as e:
            agent.add_messages(*e.messages)
        except Exception as e:
            agent.handle_uncaught_exception(e)
            agent.save(agent.config.output_path)
            raise
        finally:
            agent.save(agent.config.output_path)
        if agent.messages[-1].get("role") == "exit":
            return agent.messages[-1].get("extra", {}).get("exit_status", "")


def run_v1(agent, out):
    from minisweagent.agents.default import NonTerminatingException, TerminatingException
    from minisweagent.run.utils.save import save_traj

    # DefaultAgent.run's loop, without its reset of the messages.
    status, result = "", ""
    try:
        while True:
            try:
                agent.step()
            except NonTerminatingException as e:
                agent.add_message("user", str(e))
            except TerminatingException as e:
                agent.add_message("user", str(e))
                status, result = type(e).__name__, str(e)
                return status
    except Exception as e:
        status, result = type(e).__name__, str(e)
        raise
    finally:
        save_traj(agent, out, print_path=False, exit_status=status, result=result)


def restore_model_config(out, recorded):
    """Puts the recorded model config back: the saved one holds the bridge."""
    if not out.exists():
        return
    data = json.loads(out.read_text())
    data.setdefault("info", {}).setdefault("config", {})["model"] = recorded
    out.write_text(json.dumps(data, indent=2))


if __name__ == "__main__":
    main()
