from trainlab.hub.launch import main

main()
