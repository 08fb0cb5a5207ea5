from fsmem.cli import main

main(prog_name="fsmem")
