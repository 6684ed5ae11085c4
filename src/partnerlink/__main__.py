from partnerlink.cli import main

main()
