"""Write a real OpenHands V1 conversation with openhands-sdk/openhands-tools 1.58.2.

The model is the SDK's own scripted TestLLM (no network); the agent, its
terminal and file_editor tools and the conversation's persistence are the
real ones. Run inside a loopback-only network namespace:

  unshare -n -- <venv>/bin/python generate_ohsdk-1.58.2.py WORKSPACE OUTDIR

OUTDIR/<conversation-id>/events/event-*.json are then joined into JSONL with
  jq -c . OUTDIR/*/events/event-*.json > ohsdk_generated_1.58.2.jsonl
"""
import json
import sys

from openhands.sdk import Agent, Conversation
from openhands.sdk.llm import Message, MessageToolCall, TextContent
from openhands.sdk.testing import TestLLM
from openhands.sdk.tool import Tool
from openhands.tools.file_editor import FileEditorTool
from openhands.tools.terminal import TerminalTool

ws, out = sys.argv[1], sys.argv[2]
n = 0


def call(name, **args):
    global n
    n += 1
    return MessageToolCall(id=f"call_{n}", name=name, arguments=json.dumps(args), origin="completion")


def say(text, *calls):
    return Message(role="assistant", content=[TextContent(text=text)], tool_calls=list(calls) or None)


script = [
    say("Make a file.", call("terminal", command="mkdir -p src && printf 'alpha\\nbeta\\ngamma\\n' > src/x.txt && ls src", summary="make", security_risk="LOW")),
    say("Look at it.", call("file_editor", command="view", path=f"{ws}/src/x.txt", summary="view", security_risk="LOW")),
    say("Edit.", call("file_editor", command="str_replace", path=f"{ws}/src/x.txt", old_str="beta", new_str="BETA", summary="edit", security_risk="LOW")),
    say("Insert.", call("file_editor", command="insert", path=f"{ws}/src/x.txt", insert_line=1, new_str="one-and-a-half", summary="insert", security_risk="LOW")),
    say("Undo.", call("file_editor", command="undo_edit", path=f"{ws}/src/x.txt", summary="undo", security_risk="LOW")),
    say("A new file.", call("file_editor", command="create", path=f"{ws}/hello.py", file_text="print('hi')\n", summary="create", security_risk="LOW")),
    say("Ambiguous edit.", call("file_editor", command="str_replace", path=f"{ws}/src/x.txt", old_str="a", new_str="A", summary="bad", security_risk="LOW")),
    say("Range.", call("file_editor", command="view", path=f"{ws}/src/x.txt", view_range=[2, 3], summary="range", security_risk="LOW")),
    say("Move and fail.", call("terminal", command="cd src && pwd && false", summary="cd", security_risk="LOW")),
    say("Where am I?", call("terminal", command="pwd; echo $((6*7))", summary="pwd", security_risk="LOW")),
    say("Both at once.",
        call("terminal", command="cat x.txt", summary="cat", security_risk="LOW"),
        call("file_editor", command="view", path=ws, summary="dir", security_risk="LOW")),
    say("Remember.", call("terminal", command="export GREETING=hello; cd ..", summary="export", security_risk="LOW")),
    say("Recall.", call("terminal", command='echo "$GREETING from $(pwd)" >&2; ls', summary="recall", security_risk="LOW")),
    say("Done.", call("finish", message="done")),
]

llm = TestLLM.from_messages(script)
agent = Agent(llm=llm, tools=[Tool(name=TerminalTool.name), Tool(name=FileEditorTool.name)])
conv = Conversation(agent=agent, workspace=ws, persistence_dir=out, visualizer=None, delete_on_close=False)
conv.send_message("Make src/x.txt, edit it, and show me the workspace.")
conv.run()
print(conv.id)
