from gangplane.cli.main import main

main()
