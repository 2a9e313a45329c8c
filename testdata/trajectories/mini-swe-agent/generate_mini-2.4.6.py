"""Generate mini-swe-agent 2.4.6 trajectories with mini's own DefaultAgent,
LocalEnvironment and deterministic test models (no LLM)."""
import os, shutil, sys
from pathlib import Path
from minisweagent.agents.default import DefaultAgent
from minisweagent.environments.local import LocalEnvironment
from minisweagent.exceptions import FormatError
from minisweagent.models.test_models import (DeterministicModel, DeterministicToolcallModel,
    DeterministicResponseAPIToolcallModel, make_output, make_toolcall_output, make_response_api_output)
from minisweagent.models.utils.actions_text import parse_regex_actions
from minisweagent.models.utils.actions_toolcall import parse_toolcall_actions

out = Path(sys.argv[1])
work = Path("/tmp/mswea-work")
SYSTEM = "You are a helpful assistant that can interact with a computer shell."
INSTANCE = "Please solve this task: {{task}}"

FORMAT_ERRORS = {}

def raising(cls):
    """Like LitellmModel.query: a response that does not parse raises FormatError."""
    class M(cls):
        def query(self, messages, **kwargs):
            nxt = self.config.outputs[self.current_index + 1]
            key = nxt.get("extra", {}).get("format_error")
            if key:
                self.current_index += 1
                raise FORMAT_ERRORS[key]
            return super().query(messages, **kwargs)
    M.__name__ = cls.__name__
    M.__module__ = cls.__module__
    return M

def tc(i, cmd):
    return {"id": f"call_{i}", "type": "function", "function": {"name": "bash", "arguments": '{"command": "%s"}' % cmd}}

def run(name, model):
    if work.exists():
        shutil.rmtree(work)
    work.mkdir()
    env = LocalEnvironment(cwd=str(work))
    agent = DefaultAgent(model, env, system_template=SYSTEM, instance_template=INSTANCE,
                         step_limit=20, cost_limit=0, output_path=out / name)
    print(name, agent.run("write hello.txt containing hello"))

# 1. tool calls (LitellmModel shape): a parallel batch with a failing call,
# a tool-only response, a response without tool calls (format error), the submission.
try:
    parse_toolcall_actions([], format_error_template="{{error}}")
except FormatError as e:
    fe_tool = e
FORMAT_ERRORS["tool"] = fe_tool
fe_tool.messages[0]["extra"].update({"cost": 1.0, "response": {"choices": [{"message": {"content": "I think I am done.", "role": "assistant"}}]}})
run("toolcall.traj.json", raising(DeterministicToolcallModel)(outputs=[
    make_toolcall_output("Let me look around first.", [tc("a1", "ls -a"), tc("a2", "cat missing.txt")],
        [{"command": "ls -a", "tool_call_id": "call_a1"}, {"command": "cat missing.txt", "tool_call_id": "call_a2"}]),
    make_toolcall_output(None, [tc("b1", "printf hello > hello.txt && cat hello.txt")],
        [{"command": "printf hello > hello.txt && cat hello.txt", "tool_call_id": "call_b1"}]),
    {"role": "assistant", "content": "I think I am done.", "extra": {"format_error": "tool"}},
    make_toolcall_output("Submitting.", [tc("c1", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat hello.txt")],
        [{"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && cat hello.txt", "tool_call_id": "call_c1"}]),
]))

# 2. text-based (LitellmTextbasedModel shape): mswea_bash_command fences.
REGEX = r"```mswea_bash_command\s*\n(.*?)\n```"
two = "Two at once:\n\n```mswea_bash_command\nls\n```\n\n```mswea_bash_command\npwd\n```"
try:
    parse_regex_actions(two, action_regex=REGEX, format_error_template="Please always provide EXACTLY ONE action in triple backticks, found {{actions|length}} actions.")
except FormatError as e:
    fe_text = e
FORMAT_ERRORS["text"] = fe_text
fe_text.messages[0]["extra"].update({"cost": 1.0})
def text(content):
    """Like LitellmTextbasedModel.query: actions parsed with mini's own regex."""
    return make_output(content, parse_regex_actions(content, action_regex=REGEX, format_error_template="x"))
run("textbased.traj.json", raising(DeterministicModel)(outputs=[
    text("THOUGHT: create the file.\n\n```mswea_bash_command\nprintf hello > hello.txt\n```"),
    {"role": "assistant", "content": two, "extra": {"format_error": "text"}},
    text("THOUGHT: this fails.\n\n```mswea_bash_command\nexit 3\n```"),
    text("THOUGHT: done.\n\n```mswea_bash_command\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"),
]))

# 3. Responses API (LitellmResponseModel shape).
run("responses.traj.json", DeterministicResponseAPIToolcallModel(outputs=[
    make_response_api_output("Looking.", [{"command": "ls -a", "tool_call_id": "fc_1"}, {"command": "printf hello > hello.txt", "tool_call_id": "fc_2"}]),
    make_response_api_output(None, [{"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "tool_call_id": "fc_3"}]),
]))
