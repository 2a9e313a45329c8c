"""Record an OpenHands V1 conversation with the installed openhands-sdk and
openhands-tools against a model at an OpenAI-compatible URL (pvisor's fake
model in replay/e2e's TestRecordOpenHandsSessions, inside a loopback-only
network namespace): the SDK's own Agent with its terminal and file_editor,
LocalConversation persisting to OUTDIR.

  python record_ohsdk.py WORKSPACE OUTDIR API_BASE TASK   (key: OPENAI_API_KEY)

OUTDIR/<conversation-id>/events/event-*.json are the events; the test joins
them into JSONL (one compact event per line).
"""
import sys

from openhands.sdk import LLM, Agent, Conversation
from openhands.sdk.tool import Tool
from openhands.tools.file_editor import FileEditorTool
from openhands.tools.terminal import TerminalTool

ws, out, api_base, task = sys.argv[1:5]
llm = LLM(model="openai/fake-model", base_url=api_base, usage_id="agent", num_retries=0)
agent = Agent(llm=llm, tools=[Tool(name=TerminalTool.name), Tool(name=FileEditorTool.name)])
conv = Conversation(agent=agent, workspace=ws, persistence_dir=out, visualizer=None, delete_on_close=False)
conv.send_message(task)
conv.run()
print(conv.id)
