"""Expected file-editor results (editor_big.json) from openhands-tools 1.58.2's own
FileEditor, for TestEditorMatchesOpenHands. The tree it runs on is made by makeBigTree
in replay_test.go (the same files, under /tmp/edchk/big). Run inside `unshare -n`.
"""
import json
from openhands.tools.file_editor.editor import FileEditor
ed=FileEditor(workspace_root="/tmp/edchk/big")
out={}
out["view"]=ed(command="view",path="/tmp/edchk/big/big.txt").text
out["range"]=ed(command="view",path="/tmp/edchk/big/big.txt",view_range=[2990,-1]).text
out["dir"]=ed(command="view",path="/tmp/edchk/big").text
out["replace"]=ed(command="str_replace",path="/tmp/edchk/big/big.txt",old_str="line 1500 xx\n",new_str="LINE\nFIFTEEN\n").text
out["insert0"]=ed(command="insert",path="/tmp/edchk/big/big.txt",insert_line=0,new_str="top").text
json.dump(out, open("editor_big.json","w"), indent=1)
