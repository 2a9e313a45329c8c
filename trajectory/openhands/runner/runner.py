"""pvisor's OpenHands runner: continues a rebuilt V1 conversation with the
openhands-sdk's own Agent, LLM, tools and LocalConversation.

Usage: python runner.py REQUEST.json [--model NAME], with the python of
the SDK's venv. The request names the rebuilt events (JSONL, one V1 event
per line), the folder of the conversation to create, its id, the workspace
and the bridge URL; --model is the model name sent to the bridge (the
recorded events do not name one). The bridge token comes in OPENAI_API_KEY:
litellm's openai provider reads it there and the LLM is given no key, so
the SDK persists none. The events are written into the new conversation's
own event store, then LocalConversation opens it (with the SDK's own
checks of the event log) and runs until the agent finishes; pvisor reads
the conversation's events folder afterwards.
"""

import json
import signal
import sys
import uuid
from pathlib import Path

EXIT_UNSUPPORTED = 11

# The tools a recorded SystemPromptEvent may list (by their kind) and the
# module that registers each. finish and think come with every agent.
TOOL_MODULES = {
    "TerminalTool": "openhands.tools.terminal",
    "FileEditorTool": "openhands.tools.file_editor",
    "TaskTrackerTool": "openhands.tools.task_tracker",
}
BUILTIN = {"FinishTool", "ThinkTool"}


class Stopped(BaseException):
    """SIGTERM: pvisor stops the runner at the step budget."""


def stop(signum, frame):
    raise Stopped()


def refuse(msg):
    print(f"pvisor-openhands-runner: {msg}", file=sys.stderr)
    sys.exit(EXIT_UNSUPPORTED)


def main():
    import importlib

    from openhands.sdk import LLM, Agent, Conversation
    from openhands.sdk.conversation.persistence_const import EVENT_FILE_PATTERN, EVENTS_DIR
    from openhands.sdk.tool import Tool

    req = json.loads(Path(sys.argv[1]).read_text())
    model = req["model"]
    args = sys.argv[2:]
    while args:
        if args[0] == "--model" and len(args) > 1:
            model = args[1] if "/" in args[1] else "openai/" + args[1]
            args = args[2:]
        else:
            refuse(f"unknown argument {args[0]!r} (the runner takes --model NAME)")
    lines = [l for l in Path(req["events"]).read_text().splitlines() if l.strip()]
    events = [json.loads(l) for l in lines]
    system = next((e for e in events if e.get("kind") == "SystemPromptEvent"), None)
    if system is None:
        refuse("the conversation has no SystemPromptEvent: the agent's tools are unknown")
    tools = []
    for t in system.get("tools", []):
        kind = t.get("kind", "")
        if kind in BUILTIN:
            continue
        if kind not in TOOL_MODULES:
            refuse(f"the conversation uses the tool {kind}, which the runner cannot build")
        importlib.import_module(TOOL_MODULES[kind])
        tools.append(Tool(name=t.get("title") or kind))

    cid = uuid.UUID(req["conversation_id"])
    base = Path(req["persistence_dir"])
    conv_dir = base / cid.hex
    (conv_dir / EVENTS_DIR).mkdir(parents=True, exist_ok=True)
    for i, (line, ev) in enumerate(zip(lines, events)):
        name = EVENT_FILE_PATTERN.format(idx=i, event_id=ev["id"])
        (conv_dir / EVENTS_DIR / name).write_text(line)

    llm = LLM(model=model, base_url=req["api_base"], usage_id="agent",
              num_retries=0, drop_params=False)
    agent = Agent(llm=llm, tools=tools)
    conv = Conversation(agent=agent, workspace=req["workspace"], persistence_dir=str(base),
                        conversation_id=cid, visualizer=None, delete_on_close=False,
                        max_iteration_per_run=req.get("max_iterations", 500))
    signal.signal(signal.SIGTERM, stop)
    status = "stopped"
    try:
        conv.run()
        status = str(conv.state.execution_status.value)
    except Stopped:
        pass
    print(json.dumps({"execution_status": status, "events_dir": str(conv_dir / EVENTS_DIR)}))


if __name__ == "__main__":
    main()
